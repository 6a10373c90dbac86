package hftok

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/udgamlabs/udgam-ci/internal/hfref"
)

// TestComponentsMatchTransformersJS swaps the normalizer, pre-tokenizer
// and added tokens of real files (Mistral's SentencePiece-style BPE,
// GPT-2's byte-level BPE) for components the five families do not use, and
// checks the shared text set against transformers.js. Only configurations
// where transformers.js follows tokenizers are here: it does not split in
// Metaspace, merges punctuation runs in Punctuation, treats Split's merged
// behaviors as Isolated, reads Whitespace's \w as ASCII, prepends to empty
// text and ignores single_word and normalized; those are checked in
// TestPreTokenizers, TestNormalizers and TestAddedTokens against
// tokenizers' source and its own cases.
func TestComponentsMatchTransformersJS(t *testing.T) {
	const toMeta = `{"type":"Replace","pattern":{"String":" "},"content":"▁"}`
	const prep = `{"type":"Prepend","prepend":"▁"}`
	mistralAdded := `[{"id":0,"content":"<unk>","special":true,"normalized":false},{"id":1,"content":"<s>","special":true,"normalized":false},{"id":2,"content":"</s>","special":true,"normalized":false}]`
	cases := []struct {
		name, family, normalizer, pre, added string
	}{
		{"NFKC and Lowercase", "mistral", `{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"},` + prep + `,` + toMeta + `]}`, `null`, ""},
		{"NFD and StripAccents", "mistral", `{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"},` + toMeta + `]}`, `null`, ""},
		{"NFKD", "mistral", `{"type":"Sequence","normalizers":[{"type":"NFKD"},` + toMeta + `]}`, `null`, ""},
		{"Strip and Replace regex", "mistral", `{"type":"Sequence","normalizers":[{"type":"Strip","strip_left":true,"strip_right":true},{"type":"Replace","pattern":{"Regex":" {2,}"},"content":" "},` + toMeta + `]}`, `null`, ""},
		{"Bert", "mistral", `{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true}`, `{"type":"BertPreTokenizer"}`, ""},
		{"WhitespaceSplit", "mistral", `null`, `{"type":"WhitespaceSplit"}`, ""},
		{"Punctuation and Digits", "mistral", `null`, `{"type":"Sequence","pretokenizers":[{"type":"Punctuation","behavior":"Contiguous"},{"type":"Digits","individual_digits":true}]}`, ""},
		{"Digits grouped", "mistral", toMeta, `{"type":"Digits","individual_digits":false}`, ""},
		{"Split removed", "mistral", `null`, `{"type":"Split","pattern":{"Regex":"\\s+"},"behavior":"Removed","invert":false}`, ""},
		{"Split inverted", "mistral", `null`, `{"type":"Split","pattern":{"Regex":"\\p{L}+|\\p{N}"},"behavior":"Removed","invert":true}`, ""},
		{"Split string", "mistral", toMeta, `{"type":"Split","pattern":{"String":"▁"},"behavior":"Isolated","invert":false}`, ""},
		{"lstrip and rstrip", "mistral", toMeta, `null`, mistralAdded[:len(mistralAdded)-1] +
			`,{"id":32000,"content":"<mask>","special":true,"normalized":false,"lstrip":true,"rstrip":true},{"id":32001,"content":"[PAD0]","special":false,"normalized":false,"rstrip":true},{"id":32002,"content":"<|endoftext|>","special":true,"normalized":false,"lstrip":true}]`},
		{"ByteLevel prefix space", "gpt2", `null`, `{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true}`, ""},
		{"Digits then ByteLevel", "gpt2", `{"type":"NFKC"}`, `{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},{"type":"ByteLevel","add_prefix_space":false,"use_regex":true}]}`, ""},
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
