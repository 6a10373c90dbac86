//go:build cgo

package tokenizer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ollama/ollama/convert/sentencepiece"
	"golang.org/x/text/unicode/norm"
	"google.golang.org/protobuf/proto"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/convert/tokenizer"
	"github.com/udgamlabs/udgam-ci/ggufspec/tokspec"
	"github.com/udgamlabs/udgam-ci/reference/hfref"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/textprep"
)

// Each family's GGUF is built once per test binary: a tiny llama (hidden
// 16, one layer, tied f16 embedding, so Gemma's 262k vocabulary stays a
// few MB) around the family's real tokenizer files.
var (
	buildDir  string
	buildMu   sync.Mutex
	buildDone = map[string]*built{}
)

type built struct {
	path string
	res  convert.Result
	info runner.Info
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// tiny is the model around the tokenizers; only its tokenizer matters.
var tiny = converttest.Llama{Hidden: 16, Intermediate: 32, Heads: 2, KVHeads: 1, Layers: 1, Dtype: "F16", Seed: 3, Tied: true}

// build converts family's tokenizer in a tiny checkpoint with vocabSize
// rows (0: the tokenizer's own size).
func build(t *testing.T, family string, vocabSize int) *built {
	t.Helper()
	return buildFrom(t, fmt.Sprintf("%s-%d", family, vocabSize), hfref.Dir(t, family), vocabSize)
}

// buildFrom converts the tokenizer files in dir, once per key.
func buildFrom(t *testing.T, key, dir string, vocabSize int) *built {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if b, ok := buildDone[key]; ok {
		if b.err != nil {
			t.Fatal(b.err)
		}
		return b
	}
	b := &built{}
	buildDone[key] = b
	b.err = func() error {
		if buildDir == "" {
			d, err := os.MkdirTemp("", "udgam-tokconv-")
			if err != nil {
				return err
			}
			buildDir = d
		}
		m := tiny
		m.Tokenizer = dir
		m.VocabSize = vocabSize
		if m.VocabSize == 0 {
			n, err := converttest.TokenizerSize(dir)
			if err != nil {
				return err
			}
			m.VocabSize = n
		}
		ckpt := filepath.Join(buildDir, key)
		if _, err := m.Write(ckpt); err != nil {
			return err
		}
		b.path = filepath.Join(buildDir, key+".gguf")
		res, err := convert.Dir(ckpt, b.path, convert.Options{Dtype: "f16"})
		if err != nil {
			return err
		}
		b.res = res
		b.info, err = runner.ReadInfo(b.path)
		return err
	}()
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b
}

func load(t *testing.T, path string) *llama.Model {
	t.Helper()
	m, err := llama.Load(path, llama.Options{Threads: 1, Context: 64, Batch: 64, Parallel: 1, CPUOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// rawComparable reports whether llama.cpp alone should give Hugging Face's
// ids for text: no added token's literal in it, and no character the
// normalizer (applied in Go by the scoring side) would change.
func rawComparable(spec tokspec.Spec, added []string, text string) bool {
	for _, a := range added {
		if strings.Contains(text, a) {
			return false
		}
	}
	if len(spec.Normalizer) > 0 {
		if string(spec.Normalizer) != `{"type":"NFC"}` || norm.NFC.String(text) != text {
			return false
		}
	}
	return true
}

// runTexts are runs of spaces and tabs, alone and between words: where
// Gemma's merges are ranked in an order llama.cpp's scores cannot follow
// (the converter reports them), these show the ids agree all the same.
func runTexts() []string {
	var out []string
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 20, 24, 29, 30, 31, 32, 33, 40, 47, 61, 62, 63, 64, 65, 100, 257, 1000} {
		for _, c := range []string{" ", "\t"} {
			r := strings.Repeat(c, n)
			out = append(out, r, "a"+r+"b", "x."+r+"the")
		}
	}
	return out
}

// TestHuggingFaceIDs converts each family's real tokenizer and compares
// llama.cpp's ids with transformers.js's on the shared text set.
func TestHuggingFaceIDs(t *testing.T) {
	t.Parallel()
	texts := append(hfref.Texts(), runTexts()...)
	for _, family := range hfref.Families() {
		t.Run(family, func(t *testing.T) {
			b := build(t, family, 0)
			want := hfref.Encode(t, hfref.Dir(t, family), texts)
			m := load(t, b.path)
			spec := *b.res.Tokenizer
			added := addedContents(t, spec.Spec)
			compared, equal := 0, 0
			for i, text := range texts {
				if !rawComparable(spec.Spec, added, text) {
					continue
				}
				compared++
				got, err := m.Tokenize(text)
				if err != nil {
					t.Fatal(err)
				}
				if slices.Equal(got, want[i]) {
					equal++
					continue
				}
				t.Errorf("text %d %q: llama.cpp %v, transformers.js %v", i, text, got, want[i])
			}
			// Through the scoring path: the GGUF's text preparation in Go
			// (added tokens, normalizer), then llama.cpp, on every text.
			wm, err := textprep.WrapModel(m)
			if err != nil {
				t.Fatal(err)
			}
			wrapped := 0
			for i, text := range texts {
				got, err := wm.Tokenize(text)
				if err != nil {
					t.Errorf("text %d %q: %v", i, text, err)
					continue
				}
				if slices.Equal(got, want[i]) {
					wrapped++
					continue
				}
				t.Errorf("text %d %q: prepared and tokenized %v, transformers.js %v", i, text, got, want[i])
			}
			t.Logf("%s: raw llama.cpp ids equal on %d of %d comparable texts; with the text preparation on %d of %d texts", family, equal, compared, wrapped, len(texts))
		})
	}
}

func addedContents(t *testing.T, s tokspec.Spec) []string {
	t.Helper()
	var out []string
	for _, a := range decodeAdded(t, s) {
		out = append(out, a.Content)
	}
	return out
}

// TestPaddingNeverMatches: a vocabulary padded to config.json's
// vocab_size gives the same ids as the unpadded tokenizer, even on text
// that spells the padding tokens.
func TestPaddingNeverMatches(t *testing.T) {
	t.Parallel()
	texts := []string{"x [PAD0] y", "[PAD0][PAD1]", "[PAD7]", "a[PAD3]b"}
	for _, family := range []string{"gpt2", "mistral"} {
		t.Run(family, func(t *testing.T) {
			dir := hfref.Dir(t, family)
			n, err := converttest.TokenizerSize(dir)
			if err != nil {
				t.Fatal(err)
			}
			b := build(t, family, n+8)
			if b.info.VocabSize != n+8 {
				t.Fatalf("vocabulary of %d tokens; want %d padded", b.info.VocabSize, n+8)
			}
			want := hfref.Encode(t, dir, texts)
			m := load(t, b.path)
			for i, text := range texts {
				got, err := m.Tokenize(text)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want[i]) {
					t.Errorf("%q: llama.cpp %v, transformers.js %v", text, got, want[i])
				}
				for _, id := range got {
					if int(id) >= n {
						t.Errorf("%q: padding token %d matched", text, id)
					}
				}
			}
		})
	}
}

// TestSpecialTokenIDs: the GGUF's BOS and EOS are the tokenizer's own
// (none when bos_token is null, as Qwen3's is), and Spec.AddBOS says what
// the reference's post-processor does.
func TestSpecialTokenIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		family   string
		bos, eos int32
		addBOS   bool
	}{
		{"gpt2", 50256, 50256, false},
		{"llama3", 128000, 128001, false},
		{"qwen3", -1, 151645, false},
		{"mistral", 1, 2, true},
		{"gemma3", 2, 106, true},
	}
	for _, tt := range tests {
		t.Run(tt.family, func(t *testing.T) {
			b := build(t, tt.family, 0)
			if b.info.BOS != tt.bos || b.info.EOS != tt.eos || b.info.HasBOS() != (tt.bos >= 0) {
				t.Errorf("BOS %d EOS %d; want %d %d", b.info.BOS, b.info.EOS, tt.bos, tt.eos)
			}
			if b.res.Tokenizer.Spec.AddBOS != tt.addBOS || b.info.AddBOS != tt.addBOS {
				t.Errorf("AddBOS spec %v info %v; want %v", b.res.Tokenizer.Spec.AddBOS, b.info.AddBOS, tt.addBOS)
			}
			load(t, b.path) // llama.cpp takes a GGUF without a BOS
		})
	}
}

// TestLlama3WithoutIgnoreMerges: Llama 3's tokenizer with ignore_merges
// false (a configuration of its own) is llama.cpp's dbrx type, and gives
// transformers.js's ids for it.
func TestLlama3WithoutIgnoreMerges(t *testing.T) {
	t.Parallel()
	src := hfref.Dir(t, "llama3")
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	const on = `"ignore_merges": true`
	if strings.Count(string(b), on) != 1 {
		t.Fatalf("llama3 tokenizer.json does not say %s once", on)
	}
	b = []byte(strings.Replace(string(b), on, `"ignore_merges": false`, 1))
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(src, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	bt := buildFrom(t, "llama3-merges", dir, 0)
	if pre := bt.res.Tokenizer.Spec.Pre; pre != "dbrx" {
		t.Fatalf("pre-tokenizer %q, want dbrx", pre)
	}
	texts := hfref.Texts()
	want := hfref.Encode(t, dir, texts)
	m := load(t, bt.path)
	added := addedContents(t, bt.res.Tokenizer.Spec)
	compared := 0
	for i, text := range texts {
		if !rawComparable(bt.res.Tokenizer.Spec, added, text) {
			continue
		}
		compared++
		got, err := m.Tokenize(text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[i]) {
			t.Errorf("text %d %q: llama.cpp %v, transformers.js %v", i, text, got, want[i])
		}
	}
	t.Logf("llama3 without ignore_merges: %d texts compared", compared)
}

// TestSentencePieceModelIDs: Mistral's vocabulary written as a
// tokenizer.model (its pieces, the scores and types its tokenizer.json
// converts to, a dummy prefix) and converted from that file alone gives
// transformers.js's ids.
func TestSentencePieceModelIDs(t *testing.T) {
	t.Parallel()
	ref := hfref.Dir(t, "mistral")
	fromJSON, err := tokenizer.Convert(os.DirFS(ref), tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tokens := fromJSON.KV["tokenizer.ggml.tokens"].([]string)
	scores := fromJSON.KV["tokenizer.ggml.scores"].([]float32)
	types := fromJSON.KV["tokenizer.ggml.token_type"].([]int32)
	bpe := sentencepiece.TrainerSpec_BPE
	mp := &sentencepiece.ModelProto{
		TrainerSpec:    &sentencepiece.TrainerSpec{ModelType: &bpe, ByteFallback: proto.Bool(true)},
		NormalizerSpec: &sentencepiece.NormalizerSpec{Name: proto.String("identity"), AddDummyPrefix: proto.Bool(true), RemoveExtraWhitespaces: proto.Bool(false)},
	}
	for i, tok := range tokens {
		typ := sentencepiece.ModelProto_SentencePiece_Type(types[i])
		mp.Pieces = append(mp.Pieces, &sentencepiece.ModelProto_SentencePiece{Piece: proto.String(tok), Score: proto.Float32(scores[i]), Type: &typ})
	}
	b, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(ref, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tokenizer.model": b, "tokenizer_config.json": cfg} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bt := buildFrom(t, "mistral-model", dir, len(tokens))
	if s := bt.res.Tokenizer.Spec; s.Source != "tokenizer.model" || s.GGUF != "llama" || bt.info.BOS != 1 {
		t.Fatalf("spec %+v, BOS %d", s, bt.info.BOS)
	}
	texts := hfref.Texts()
	want := hfref.Encode(t, ref, texts)
	m := load(t, bt.path)
	compared := 0
	for i, text := range texts {
		if !rawComparable(fromJSON.Spec, addedContents(t, fromJSON.Spec), text) {
			continue
		}
		compared++
		got, err := m.Tokenize(text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[i]) {
			t.Errorf("text %d %q: llama.cpp %v, transformers.js %v", i, text, got, want[i])
		}
	}
	t.Logf("mistral from tokenizer.model: %d texts compared", compared)
}
