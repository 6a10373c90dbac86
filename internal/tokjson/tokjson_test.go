package tokjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(`{"added_tokens":[{"id":3,"content":"<s>","special":true,"normalized":false},{"id":4,"content":"x","lstrip":true}],
		"normalizer":{"type":"NFC"},"pre_tokenizer":null,"model":{"type":"BPE","vocab":{"a":0},"merges":[],"unk_token":"<unk>","byte_fallback":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []AddedToken{{ID: 3, Content: "<s>", Special: true}, {ID: 4, Content: "x", LStrip: true}}
	if !reflect.DeepEqual(f.AddedTokens, want) {
		t.Errorf("added tokens %+v, want %+v (a flag left out reads as false)", f.AddedTokens, want)
	}
	if m := f.Model; m.Type != "BPE" || !m.ByteFallback || m.UnkToken == nil || *m.UnkToken != "<unk>" || !strings.Contains(string(m.Raw), `"vocab":{"a":0}`) {
		t.Errorf("model %+v", m)
	}
	if !IsNull(f.PreTokenizer) || IsNull(f.Normalizer) {
		t.Errorf("pre_tokenizer %s, normalizer %s", f.PreTokenizer, f.Normalizer)
	}
	// The form tokspec.Spec keeps: every field, in this order.
	b, err := json.Marshal(f.AddedTokens[1:])
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `[{"id":4,"content":"x","single_word":false,"lstrip":true,"rstrip":false,"normalized":false,"special":false}]` {
		t.Errorf("encoded %s", got)
	}
	for _, tt := range []struct{ doc, want string }{
		{`{"added_tokens":[{"content":"<x>"}]}`, `added token "<x>" has no id`},
		{`{"added_tokens":{}}`, "added_tokens"},
		{`{"model":{"type":7}}`, "cannot unmarshal"},
	} {
		if _, err := Parse([]byte(tt.doc)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error with %q", tt.doc, err, tt.want)
		}
	}
	for _, doc := range []string{`{}`, `{"model":null}`} {
		f, err := Parse([]byte(doc))
		if err != nil || !IsNull(f.Model.Raw) {
			t.Errorf("%s: model %q, %v; want none", doc, f.Model.Raw, err)
		}
	}
}

func TestParseMerges(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		raw  string
		want [][2]string
		err  string
	}{
		{`null`, nil, ""},
		{`["a b","ab c"]`, [][2]string{{"a", "b"}, {"ab", "c"}}, ""},
		{`[["a","b"],["a b","c"]]`, [][2]string{{"a", "b"}, {"a b", "c"}}, ""},
		{`["a b c"]`, nil, `merge 0 "a b c" is not two pieces`},
		{`["ab"]`, nil, `merge 0 "ab" is not two pieces`},
		{`[["a"]]`, nil, `merge 0 ["a"] is not a pair`},
		{`{}`, nil, "want strings or pairs"},
	} {
		got, err := ParseMerges(json.RawMessage(tt.raw))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want an error with %q", tt.raw, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %q, %v; want %q", tt.raw, got, err, tt.want)
		}
	}
}

func TestSequence(t *testing.T) {
	t.Parallel()
	parse := func(m json.RawMessage) (string, error) {
		if IsNull(m) {
			return "", nil
		}
		return TypeOf(m)
	}
	got, err := ParseSequence(json.RawMessage(`{"type":"Sequence","normalizers":[{"type":"NFC"},null,{"type":"Lowercase"}]}`), "normalizers", parse)
	if err != nil || !reflect.DeepEqual(got, []string{"NFC", "Lowercase"}) {
		t.Errorf("%q, %v", got, err)
	}
	if _, err := ParseSequence(json.RawMessage(`{"normalizers":[{"type":"NFC"},{}]}`), "normalizers", parse); err == nil || !strings.Contains(err.Error(), "Sequence[1]: no type") {
		t.Errorf("entry without a type: %v", err)
	}
}
