package hfref

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEncodeKnownIDs checks the harness end to end: for each family,
// transformers.js must give ids that a reading of the vocabulary file
// predicts (a word that is one vocabulary entry, a special-token literal
// that is one added token).
func TestEncodeKnownIDs(t *testing.T) {
	t.Parallel()
	type want struct {
		text  string
		piece string // vocabulary entry the text must encode to
		id    int32  // or this added token's id, when piece is ""
	}
	cases := map[string][]want{
		"gpt2": {
			{text: "Hello", piece: "Hello"},
			{text: " world", piece: "Ġworld"},
			{text: "<|endoftext|>", id: 50256},
		},
		"llama3": {
			{text: "Hello", piece: "Hello"},
			{text: " world", piece: "Ġworld"},
			{text: "<|begin_of_text|>", id: 128000},
		},
		"qwen3": {
			{text: "Hello", piece: "Hello"},
			{text: "e\u0301", piece: "Ã©"}, // NFC makes it U+00E9, bytes C3 A9
			{text: "<|im_start|>", id: 151644},
		},
		"mistral": {
			{text: "Hello", piece: "▁Hello"}, // the normalizer prepends ▁
			{text: "<s>", id: 1},
		},
		"gemma3": {
			{text: "Hello", piece: "Hello"}, // no prefix space
			{text: " world", piece: "▁world"},
			{text: "<bos>", id: 2},
		},
	}
	if got := Families(); !slices.Equal(got, []string{"gpt2", "llama3", "qwen3", "mistral", "gemma3"}) {
		t.Fatalf("Families() = %v", got)
	}
	for _, fam := range Families() {
		t.Run(fam, func(t *testing.T) {
			dir := Dir(t, fam)
			vocab, added := readVocab(t, dir)
			var texts []string
			for _, c := range cases[fam] {
				texts = append(texts, c.text)
			}
			got := Encode(t, dir, texts)
			for i, c := range cases[fam] {
				w := c.id
				if c.piece != "" {
					id, ok := vocab[c.piece]
					if !ok {
						t.Fatalf("vocabulary has no %q", c.piece)
					}
					w = id
				} else if added[w] != c.text {
					t.Fatalf("added token %d is %q, want %q", w, added[w], c.text)
				}
				if !slices.Equal(got[i], []int32{w}) {
					t.Errorf("Encode(%q) = %v, want [%d]", c.text, got[i], w)
				}
			}
			for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
				if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestGPT2Assembly(t *testing.T) {
	t.Parallel()
	dir := Dir(t, "gpt2")
	for _, name := range []string{"vocab.json", "merges.txt", "special_tokens_map.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"bos_token", "eos_token", "unk_token"} {
		if cfg[k] != "<|endoftext|>" {
			t.Errorf("tokenizer_config %s = %v", k, cfg[k])
		}
	}
}

func TestTexts(t *testing.T) {
	t.Parallel()
	texts := Texts()
	if len(texts) < 150 {
		t.Fatalf("%d texts", len(texts))
	}
	all := strings.Join(texts, "\x00")
	for _, s := range []string{"e\u0301", "\u2126", "\u212b", "\u200d", "\t", "\n\n", "'ll", "'LL",
		"<|endoftext|>", "<|im_start|>", "<s>", "</s>", "<bos>", "<|begin_of_text|>", "[PAD0]",
		"1,234,567", "你好", "नमस्ते", "مرحبا", "https://", "\nAnswer:", "\x00 45\x00"} {
		if !strings.Contains(all, s) {
			t.Errorf("text set has no %q", s)
		}
	}
	seen := map[string]bool{}
	for _, s := range texts {
		if seen[s] {
			t.Errorf("%q twice", s)
		}
		seen[s] = true
	}
}

// readVocab reads the model vocabulary and the added tokens of dir's
// tokenizer.json.
func readVocab(t *testing.T, dir string) (map[string]int32, map[int32]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tj struct {
		Model struct {
			Vocab map[string]int32 `json:"vocab"`
		} `json:"model"`
		AddedTokens []struct {
			ID      int32  `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(b, &tj); err != nil {
		t.Fatal(err)
	}
	added := map[int32]string{}
	for _, a := range tj.AddedTokens {
		added[a.ID] = a.Content
	}
	return tj.Model.Vocab, added
}
