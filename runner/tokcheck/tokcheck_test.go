package tokcheck

import (
	"errors"
	"strings"
	"testing"
)

func TestTexts(t *testing.T) {
	t.Parallel()
	texts := Texts()
	if len(texts) < 100 {
		t.Fatalf("%d texts, want the whole shared set", len(texts))
	}
	for _, want := range []string{"<|endoftext|>", "e\u0301", "日本", "👩\u200d💻"} {
		found := false
		for _, s := range texts {
			found = found || strings.Contains(s, want)
		}
		if !found {
			t.Errorf("no text holds %q", want)
		}
	}
}

func bytesOf(s string) ([]int32, error) {
	ids := make([]int32, len(s))
	for i := range ids {
		ids[i] = int32(s[i])
	}
	return ids, nil
}

func piece(id int32) string { return string(rune(id)) }

func TestCheck(t *testing.T) {
	t.Parallel()
	texts := []string{"ab", "cd", "ef"}
	if r := Check(texts, bytesOf, bytesOf, piece); !r.OK() || r.Equal != 3 || r.Tokens != 6 || !r.Compared {
		t.Errorf("equal sides: %+v", r)
	}
	// The scoring side differs at token 1 of text 1, and again later.
	prod := func(s string) ([]int32, error) {
		ids, _ := bytesOf(s)
		if s != "ab" {
			ids[1] = 'x'
		}
		return ids, nil
	}
	r := Check(texts, prod, bytesOf, piece)
	if r.OK() || r.Equal != 1 || r.First == nil {
		t.Fatalf("differing sides: %+v", r)
	}
	if d := *r.First; d.Text != 1 || d.Position != 1 || d.Got != 'x' || d.Want != 'd' || d.GotPiece != "x" || d.WantPiece != "d" {
		t.Errorf("first difference %+v, want text 1 token 1 x for d", d)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil || !strings.Contains(b.String(), `text 1 "cd", token 1: udgam-ci 120 "x", tokenizer.json 100 "d"`) {
		t.Errorf("report %q, %v", b.String(), err)
	}
	// Every differing text is reported, not only the first (issue 40).
	if len(r.Differences) != len(texts)-1 || r.Differences[len(r.Differences)-1].Text != len(texts)-1 {
		t.Errorf("differences %+v, want one for each of the %d differing texts", r.Differences, len(texts)-1)
	}
	if n := strings.Count(b.String(), "difference: text "); n != len(texts)-1 {
		t.Errorf("report lists %d differences, want %d: %q", n, len(texts)-1, b.String())
	}
	// One side shorter: the other's token is reported against none.
	short := func(s string) ([]int32, error) { ids, _ := bytesOf(s); return ids[:1], nil }
	if d := Check([]string{"ab"}, short, bytesOf, piece).First; d == nil || d.Got != -1 || d.Want != 'b' {
		t.Errorf("shorter side: %+v", d)
	}
	// A refusal by the scoring path is a difference.
	refuse := func(string) ([]int32, error) { return nil, errors.New("no") }
	if d := Check([]string{"ab"}, refuse, bytesOf, piece).First; d == nil || d.Error != "udgam-ci: no" {
		t.Errorf("refusal: %+v", d)
	}
	// Without a reference there is nothing to compare, and no difference.
	if r := Check(texts, bytesOf, nil, piece); !r.OK() || r.Compared || r.Tokens != 6 {
		t.Errorf("no reference: %+v", r)
	}
}
