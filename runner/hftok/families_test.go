package hftok

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/udgamlabs/udgam-ci/reference/hfref"
)

// loaded parses each family's tokenizer.json once per test binary (Gemma
// 3's is 33 MB).
var loaded struct {
	sync.Mutex
	toks map[string]*Tokenizer
}

func loadFamily(dir string) (*Tokenizer, error) {
	loaded.Lock()
	defer loaded.Unlock()
	if tok, ok := loaded.toks[dir]; ok {
		return tok, nil
	}
	tok, err := Load(dir)
	if err != nil {
		return nil, err
	}
	if loaded.toks == nil {
		loaded.toks = map[string]*Tokenizer{}
	}
	loaded.toks[dir] = tok
	return tok, nil
}

// familyIDs loads a family's tokenizer while transformers.js encodes texts
// with it (node and Go each take seconds on the larger files).
func familyIDs(t *testing.T, name string, texts []string) (*Tokenizer, [][]int32) {
	t.Helper()
	dir := hfref.Dir(t, name)
	type result struct {
		tok *Tokenizer
		err error
	}
	ch := make(chan result, 1)
	go func() {
		tok, err := loadFamily(dir)
		ch <- result{tok, err}
	}()
	want := hfref.Encode(t, dir, texts)
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.tok, want
}

// compare encodes texts with tok and checks them id for id against want,
// reporting the first difference of each text (at most 10 texts).
func compare(t *testing.T, tok *Tokenizer, texts []string, want [][]int32) (same int) {
	t.Helper()
	bad := 0
	for i, text := range texts {
		got, err := tok.Encode(text)
		if err != nil {
			t.Errorf("Encode(%q): %v", text, err)
			continue
		}
		if slices.Equal(got, want[i]) {
			same++
			continue
		}
		if bad++; bad <= 10 {
			t.Errorf("text %d %q: %s", i, text, firstDiff(got, want[i]))
		}
	}
	return same
}

func firstDiff(got, want []int32) string {
	n := 0
	for n < len(got) && n < len(want) && got[n] == want[n] {
		n++
	}
	return fmt.Sprintf("first difference at id %d: got %v, transformers.js %v", n,
		got[n:min(len(got), n+6)], want[n:min(len(want), n+6)])
}

// TestFamiliesMatchTransformersJS is the main check: every family's real
// tokenizer.json on the shared text set and on seeded random mixtures of
// its characters and words and on long texts, id for id against
// transformers.js (one node call a family).
func TestFamiliesMatchTransformersJS(t *testing.T) {
	t.Parallel()
	texts := hfref.Texts()
	mixes := mixtures(texts, 150)
	// Long runs test the merge order (lowest rank, then leftmost) on long
	// words; the whole set joined tests offsets deep into a document.
	long := []string{strings.Repeat("a", 1000), strings.Repeat("1", 500), strings.Repeat(" ", 300) + "x",
		strings.Repeat("\n", 100), strings.Repeat("ab", 400), strings.Repeat("▁", 50), strings.Repeat("é", 300),
		strings.Repeat("🎉", 50), strings.Repeat("--", 100), strings.Repeat("\t ", 60),
		strings.Repeat("<|endoftext|>", 5) + strings.Repeat("<s>", 3), strings.Join(texts, " ")}
	for _, name := range hfref.Families() {
		t.Run(name, func(t *testing.T) {
			all := append(append(slices.Clone(texts), mixes...), long...)
			tok, want := familyIDs(t, name, all)
			same := compare(t, tok, texts, want[:len(texts)])
			t.Logf("%s: %d of %d texts give transformers.js's ids", name, same, len(texts))
			same = compare(t, tok, mixes, want[len(texts):len(texts)+len(mixes)])
			t.Logf("%s: %d of %d random mixtures give transformers.js's ids", name, same, len(mixes))
			same = compare(t, tok, long, want[len(texts)+len(mixes):])
			t.Logf("%s: %d of %d long texts give transformers.js's ids", name, same, len(long))
		})
	}
}

// mixtures makes n seeded random texts from the set's words, space runs
// and characters.
func mixtures(texts []string, n int) []string {
	var runes []rune
	var words []string
	for _, s := range texts {
		runes = append(runes, []rune(s)...)
		words = append(words, strings.FieldsFunc(s, func(r rune) bool { return r == ' ' })...)
	}
	rng := rand.New(rand.NewPCG(19, 2026))
	var mixes []string
	for range n {
		var b strings.Builder
		for range 1 + rng.IntN(16) {
			switch rng.IntN(4) {
			case 0:
				b.WriteString(words[rng.IntN(len(words))])
			case 1:
				b.WriteString(strings.Repeat(" ", rng.IntN(4)))
			default:
				for range 1 + rng.IntN(4) {
					b.WriteRune(runes[rng.IntN(len(runes))])
				}
			}
		}
		mixes = append(mixes, b.String())
	}
	return mixes
}

// TestSegmentsRealFamilies: the production path's pre-steps on real files.
// Qwen3's special tokens are matched on raw text and the rest NFC-normalized;
// GPT-2's <|endoftext|> has normalized=true, so only the second pass
// (SplitNormalized, which Segments runs) finds it.
func TestSegmentsRealFamilies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		family, text  string
		segments, raw string
	}{
		{"qwen3", "a<|im_start|>e\u0301<think>", `"a"["<|im_start|>"=151644]"é"["<think>"=151667]`, `"a"["<|im_start|>"=151644]"e` + "\u0301" + `"["<think>"=151667]`},
		{"gpt2", "a<|endoftext|> b", `"a"["<|endoftext|>"=50256]" b"`, `"a<|endoftext|> b"`},
		{"mistral", "<s>x</s>", `["<s>"=1]"▁x"["</s>"=2]`, `["<s>"=1]"x"["</s>"=2]`},
		{"gemma3", "<bos>a b<start_of_turn>", `["<bos>"=2]"a▁b"["<start_of_turn>"=105]`, `["<bos>"=2]"a b"["<start_of_turn>"=105]`},
	}
	for _, c := range cases {
		t.Run(c.family, func(t *testing.T) {
			tok, err := loadFamily(hfref.Dir(t, c.family))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tok.Segments(c.text)
			if err != nil {
				t.Fatal(err)
			}
			if segs(got) != c.segments {
				t.Errorf("Segments(%q) = %s, want %s", c.text, segs(got), c.segments)
			}
			if g := segs(tok.SplitAdded(c.text)); g != c.raw {
				t.Errorf("SplitAdded(%q) = %s, want %s", c.text, g, c.raw)
			}
		})
	}
}
