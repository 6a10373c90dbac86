package hftok

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/reference/hfref"
)

// TestComponentsMatchTransformersJS swaps the normalizer, pre-tokenizer
// and added tokens of real files (Mistral's SentencePiece-style BPE,
// GPT-2's byte-level BPE) for components the five families do not use, and
// checks the shared text set against transformers.js. Only configurations
// where transformers.js follows tokenizers are here: it does not split in
// Metaspace, merges punctuation runs in Punctuation, treats Split's merged
// behaviors as Isolated, reads Whitespace's \w as ASCII, prepends to empty
// text and ignores single_word and normalized; those are checked in
// TestPreTokenizers, hfprep's TestNormalizers and TestAddedTokens against
// tokenizers' source and its own cases.
func TestComponentsMatchTransformersJS(t *testing.T) {
	t.Parallel()
	const toMeta = `{"type":"Replace","pattern":{"String":" "},"content":"▁"}`
	const prep = `{"type":"Prepend","prepend":"▁"}`
	mistralAdded := `[{"id":0,"content":"<unk>","special":true,"normalized":false},{"id":1,"content":"<s>","special":true,"normalized":false},{"id":2,"content":"</s>","special":true,"normalized":false}]`
	cases := []struct {
		name, family, normalizer, pre, added string
		model                                func(t *testing.T, doc map[string]json.RawMessage) json.RawMessage
	}{
		{"NFKC and Lowercase", "mistral", `{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"},` + prep + `,` + toMeta + `]}`, `null`, "", nil},
		{"NFD and StripAccents", "mistral", `{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"},` + toMeta + `]}`, `null`, "", nil},
		{"NFKD", "mistral", `{"type":"Sequence","normalizers":[{"type":"NFKD"},` + toMeta + `]}`, `null`, "", nil},
		{"Strip and Replace regex", "mistral", `{"type":"Sequence","normalizers":[{"type":"Strip","strip_left":true,"strip_right":true},{"type":"Replace","pattern":{"Regex":" {2,}"},"content":" "},` + toMeta + `]}`, `null`, "", nil},
		{"Bert", "mistral", `{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true}`, `{"type":"BertPreTokenizer"}`, "", nil},
		{"WhitespaceSplit", "mistral", `null`, `{"type":"WhitespaceSplit"}`, "", nil},
		{"Punctuation and Digits", "mistral", `null`, `{"type":"Sequence","pretokenizers":[{"type":"Punctuation","behavior":"Contiguous"},{"type":"Digits","individual_digits":true}]}`, "", nil},
		{"Digits grouped", "mistral", toMeta, `{"type":"Digits","individual_digits":false}`, "", nil},
		{"Split removed", "mistral", `null`, `{"type":"Split","pattern":{"Regex":"\\s+"},"behavior":"Removed","invert":false}`, "", nil},
		{"Split inverted", "mistral", `null`, `{"type":"Split","pattern":{"Regex":"\\p{L}+|\\p{N}"},"behavior":"Removed","invert":true}`, "", nil},
		{"Split string", "mistral", toMeta, `{"type":"Split","pattern":{"String":"▁"},"behavior":"Isolated","invert":false}`, "", nil},
		{"lstrip and rstrip", "mistral", toMeta, `null`, mistralAdded[:len(mistralAdded)-1] +
			`,{"id":32000,"content":"<mask>","special":true,"normalized":false,"lstrip":true,"rstrip":true},{"id":32001,"content":"[PAD0]","special":false,"normalized":false,"rstrip":true},{"id":32002,"content":"<|endoftext|>","special":true,"normalized":false,"lstrip":true}]`, nil},
		{"ByteLevel prefix space", "gpt2", `null`, `{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true}`, "", nil},
		{"Digits then ByteLevel", "gpt2", `{"type":"NFKC"}`, `{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},{"type":"ByteLevel","add_prefix_space":false,"use_regex":true}]}`, "", nil},
		{"Unigram", "mistral", `{"type":"Sequence","normalizers":[` + prep + `,` + toMeta + `]}`, `null`, "", unigramFromBPE},
	}
	texts := hfref.Texts()
	base := map[string]map[string]json.RawMessage{}
	dirs := make([]string, len(cases))
	toks := make([]*Tokenizer, len(cases))
	for i, c := range cases {
		doc, ok := base[c.family]
		if !ok {
			b, err := os.ReadFile(filepath.Join(hfref.Dir(t, c.family), "tokenizer.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			base[c.family] = doc
		}
		m := map[string]json.RawMessage{}
		for k, v := range doc {
			m[k] = v
		}
		m["normalizer"] = json.RawMessage(c.normalizer)
		m["pre_tokenizer"] = json.RawMessage(c.pre)
		if c.added != "" {
			m["added_tokens"] = json.RawMessage(c.added)
		}
		if c.model != nil {
			m["model"] = c.model(t, doc)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		dirs[i] = t.TempDir()
		if err := os.WriteFile(filepath.Join(dirs[i], "tokenizer.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dirs[i], "tokenizer_config.json"), []byte(`{"tokenizer_class":"PreTrainedTokenizer"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if toks[i], err = Parse(b); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	want := hfref.EncodeDirs(t, dirs, texts)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if same := compare(t, toks[i], texts, want[i]); same < len(texts) {
				t.Logf("%d of %d texts give transformers.js's ids", same, len(texts))
			}
		})
	}
}

// unigramFromBPE makes a Unigram model from a BPE file's vocabulary with
// seeded random scores, plus a low-scored piece for every character of the
// text set, so no text needs unk or byte fallback, which transformers.js
// does not implement for Unigram. Pieces that repeat a shorter string
// ("▁▁", "0000") are left out: with them two orders of the same pieces tie
// ("▁▁"+"▁" against "▁"+"▁▁"), and transformers.js breaks ties otherwise
// than tokenizers (its lattice against SentencePiece's optimized Viterbi,
// which hftok follows).
func unigramFromBPE(t *testing.T, doc map[string]json.RawMessage) json.RawMessage {
	var m struct {
		Vocab map[string]int32 `json:"vocab"`
	}
	if err := json.Unmarshal(doc["model"], &m); err != nil {
		t.Fatal(err)
	}
	pieces := make([]string, len(m.Vocab))
	have := map[string]bool{}
	for p, id := range m.Vocab {
		have[p] = true
		pieces[id] = p
		if repeats(p) {
			pieces[id] = fmt.Sprintf("<unused%d>", id)
		}
	}
	for _, s := range hfref.Texts() {
		for _, r := range s {
			if !have[string(r)] {
				have[string(r)] = true
				pieces = append(pieces, string(r))
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 11))
	vocab := make([][2]any, len(pieces))
	for i, p := range pieces {
		score := -1 - 14*rng.Float64()
		if i >= len(m.Vocab) {
			score = -20 - rng.Float64()
		}
		vocab[i] = [2]any{p, score}
	}
	b, err := json.Marshal(map[string]any{"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": false})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// repeats reports whether s is a shorter string repeated.
func repeats(s string) bool {
	r := []rune(s)
	for n := 1; n <= len(r)/2; n++ {
		if len(r)%n == 0 && strings.Repeat(string(r[:n]), len(r)/n) == s {
			return true
		}
	}
	return false
}
