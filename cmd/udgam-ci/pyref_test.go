//go:build cgo

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/hfref"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/textprep"
	"github.com/udgamlabs/udgam-ci/runner/tokcheck"
)

// pyrefPython is the interpreter of the pinned reference stack
// (scripts/pyref/install.sh), given by UDGAM_PYREF_PYTHON; `make
// crosscheck-tokenizers` sets it. Without it the reference checks skip:
// Python is the judge, never something the product or `make test` needs.
func pyrefPython(t *testing.T) string {
	t.Helper()
	p := os.Getenv("UDGAM_PYREF_PYTHON")
	if p == "" {
		t.Skip("UDGAM_PYREF_PYTHON is not set (make crosscheck-tokenizers sets it to the pinned reference stack)")
	}
	return p
}

// referenceTexts are the built-in multilingual set and every prompt and
// continuation (" " + choice) of the core Probe Suite, each once.
func referenceTexts(t *testing.T) []string {
	t.Helper()
	texts := tokcheck.Texts()
	set, err := probes.Core()
	if err != nil {
		t.Fatal(err)
	}
	for i := range set.Items {
		texts = append(texts, set.Items[i].Prompt)
		texts = append(texts, probes.ChoiceTexts(&set.Items[i])...)
	}
	seen := map[string]bool{}
	out := texts[:0]
	for _, s := range texts {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// scoringIDs tokenizes texts the way the scorers do: the converted GGUF,
// text preparation, llama.cpp.
func scoringIDs(t *testing.T, gguf string, texts []string) [][]int32 {
	t.Helper()
	m, err := llama.Load(gguf, llama.Options{Threads: 1, Context: 64, Batch: 64, Parallel: 1, CPUOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	w, err := textprep.WrapModel(m)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([][]int32, len(texts))
	for i, s := range texts {
		if ids[i], err = w.Tokenize(s); err != nil {
			t.Fatalf("text %d %q: %v", i, s, err)
		}
	}
	return ids
}

// autoTokenizerDiffers names the families whose tokenizer.json
// transformers' AutoTokenizer does not run as it is written, and why.
// TestTokenizersReference requires these to differ still (so that the
// note is dropped when transformers changes) and every other to agree.
var autoTokenizerDiffers = map[string]string{
	// transformers 5's LlamaTokenizer (tokenizer_class of Mistral's and
	// Llama 2's files) rebuilds the pipeline: a Metaspace pre-tokenizer
	// that prepends "▁" only where the text does not start with a space,
	// in place of the file's Prepend normalizer, which always does. " Hello"
	// is ["▁Hello"] to it and ["▁", "▁Hello"] to tokenizers, transformers.js
	// and SentencePiece (legacy: true).
	"mistral": "LlamaTokenizer replaces the file's Prepend normalizer with Metaspace",
	// The same class rebuilds a SentencePiece-style pipeline around
	// DeepSeek-V3's byte-level vocabulary (its tokenizer_class is
	// LlamaTokenizerFast): "Hello world" is 3 tokens to it, 2 to tokenizers.
	"deepseek-v3": "LlamaTokenizer rebuilds a SentencePiece pipeline around a byte-level vocabulary",
	// and puts "▁" after an added token too, where Metaspace's "first" does not.
	"mistral-metaspace": "LlamaTokenizer puts a space prefix after added tokens too",
	// GPT2Tokenizer (the file's tokenizer_class) splits with GPT-2's
	// regex, not o200k's.
	"gpt-4o": "GPT2Tokenizer splits with GPT-2's regex, not o200k's",
}

// TestTokenizersReference checks the scoring path against Hugging Face
// tokenizers itself (the Rust library, through the pinned Python stack) on
// every real tokenizer family and every text the scorers feed it: the
// built-in set and all core Probe Suite prompts and continuations. It
// reports where transformers.js, the reference of `make test`, disagrees
// with tokenizers (tokenizers wins), and runs scripts/pyref/tokenizers_check.py,
// which compares tokenizers with transformers' AutoTokenizer.
func TestTokenizersReference(t *testing.T) {
	t.Parallel()
	py := pyrefPython(t)
	texts := referenceTexts(t)
	families := append(hfref.Families(), hfref.WidenedFamilies()...)
	var dirs []string
	for _, family := range families {
		dirs = append(dirs, hfref.Dir(t, family))
		t.Run(family, func(t *testing.T) {
			fm := familyModel(t, family)
			version, want, err := tokcheck.Python{Path: py}.Encode(context.Background(), filepath.Join(hfref.Dir(t, family), "tokenizer.json"), texts)
			if err != nil {
				t.Fatal(err)
			}
			got := scoringIDs(t, fm.gguf, texts)
			if why := refusedFamilies[family]; why != "" {
				checkStillRefused(t, fm.ckpt, why, texts, got, want)
			} else {
				bad := 0
				for i := range texts {
					if !slices.Equal(got[i], want[i]) {
						if bad++; bad <= 3 {
							t.Errorf("text %d %q: udgam-ci %v, tokenizers %s %v", i, clipText(texts[i]), got[i], version, want[i])
						}
					}
				}
				t.Logf("%s: udgam-ci equal to tokenizers %s on %d of %d texts", family, version, len(texts)-bad, len(texts))
			}
			js := hfref.Encode(t, hfref.Dir(t, family), texts)
			var differ []int
			for i := range texts {
				if !slices.Equal(js[i], want[i]) {
					differ = append(differ, i)
				}
			}
			if len(differ) > 0 {
				i := differ[0]
				t.Logf("%s: transformers.js differs from tokenizers on %d texts (tokenizers wins); first: text %d %q: transformers.js %v, tokenizers %v", family, len(differ), i, clipText(texts[i]), js[i], want[i])
			} else {
				t.Logf("%s: transformers.js equal to tokenizers on all %d texts", family, len(texts))
			}
		})
	}
	t.Run("smollm2", func(t *testing.T) {
		gguf := os.Getenv("UDGAM_SMOLLM2_GGUF")
		if gguf == "" {
			t.Skip("UDGAM_SMOLLM2_GGUF is not set (make crosscheck-tokenizers sets it)")
		}
		dir := smollm2TokenizerDir(t, gguf)
		familyMu.Lock()
		familyDirs["smollm2"] = dir
		familyMu.Unlock()
		fm := familyModel(t, "smollm2")
		version, want, err := tokcheck.Python{Path: py}.Encode(context.Background(), filepath.Join(dir, "tokenizer.json"), texts)
		if err != nil {
			t.Fatal(err)
		}
		if g, err := testmodel.ReadGGUF(fm.gguf); err != nil || g.KV.String("tokenizer.ggml.pre") != "smollm" {
			t.Errorf("converted: %v; want llama.cpp's smollm pre-tokenizer", err)
		}
		got := scoringIDs(t, fm.gguf, texts)
		bad := 0
		for i := range texts {
			if !slices.Equal(got[i], want[i]) {
				if bad++; bad <= 3 {
					t.Errorf("text %d %q: udgam-ci %v, tokenizers %s %v", i, clipText(texts[i]), got[i], version, want[i])
				}
			}
		}
		t.Logf("smollm2 (rebuilt from the real vocabulary): udgam-ci equal to tokenizers %s on %d of %d texts", version, len(texts)-bad, len(texts))
		// Byte 0x04 has no token: tokenizers drops it, the scoring path
		// refuses the text rather than differ.
		_, dropped, err := tokcheck.Python{Path: py}.Encode(context.Background(), filepath.Join(dir, "tokenizer.json"), []string{"a\x04b", "ab", "a b"})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("tokenizers: %q -> %v (%q -> %v)", "a\x04b", dropped[0], "ab", dropped[1])
		if e, out, errb := freshTestEnvText(t, fm.gguf, "a\x04b"); e != 1 || !strings.Contains(out, "holds byte 0x04") {
			t.Errorf("check-tokenizer on a text holding byte 0x04: exit %d, %s%s; want a refusal naming it", e, out, errb)
		}
	})
	t.Run("AutoTokenizer", func(t *testing.T) {
		checkAutoTokenizer(t, py, families, dirs, tokcheck.Texts())
	})
}

// smollm2TokenizerDir rebuilds SmolLM2's tokenizer files from a GGUF that
// llama.cpp's converter wrote from them (scripts/pyref/smollm2_gguf.sh):
// the vocabulary, merges and special tokens are the real ones; the pipeline
// around them (Digits, then ByteLevel with its regex; no normalizer) and
// tokenizer_config.json (<|endoftext|> as BOS and EOS) are SmolLM2's
// published configuration, written here.
func smollm2TokenizerDir(t *testing.T, path string) string {
	t.Helper()
	g, err := testmodel.ReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	if pre := g.KV.String("tokenizer.ggml.pre"); pre != "smollm" {
		t.Fatalf("%s: tokenizer.ggml.pre %q, want smollm", path, pre)
	}
	tokens, types := g.KV.Strings("tokenizer.ggml.tokens"), g.KV.Ints("tokenizer.ggml.token_type")
	if len(tokens) != 49152 || len(types) != len(tokens) {
		t.Fatalf("%s: %d tokens, %d types; SmolLM2 has 49,152", path, len(tokens), len(types))
	}
	vocab := make(map[string]int, len(tokens))
	var added []map[string]any
	for i, tok := range tokens {
		vocab[tok] = i
		if types[i] == 3 { // control: one of SmolLM2's 17 special tokens
			added = append(added, map[string]any{"id": i, "content": tok, "single_word": false, "lstrip": false,
				"rstrip": false, "normalized": false, "special": true})
		}
	}
	byteLevel := func(prefix bool) map[string]any {
		return map[string]any{"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": true, "use_regex": true}
	}
	tj := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added, "normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Digits", "individual_digits": true}, byteLevel(false)}},
		"post_processor": byteLevel(true), "decoder": byteLevel(true),
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "vocab": vocab,
			"merges": g.KV.Strings("tokenizer.ggml.merges")},
	}
	tc := map[string]any{"add_prefix_space": false, "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
		"unk_token": "<|endoftext|>", "clean_up_tokenization_spaces": false, "model_max_length": 8192,
		"tokenizer_class": "GPT2Tokenizer"}
	dir := t.TempDir()
	for name, v := range map[string]any{"tokenizer.json": tj, "tokenizer_config.json": tc} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkStillRefused: the converter refuses the checkpoint's tokenizer
// (why), and converted anyway its ids differ from tokenizers' only on texts
// holding a combining mark (\p{M}), which llama.cpp's o200k split leaves
// out of words; and they do differ somewhere, or the refusal has no reason
// left.
func checkStillRefused(t *testing.T, ckpt, why string, texts []string, got, want [][]int32) {
	t.Helper()
	if _, err := convert.Dir(ckpt, filepath.Join(t.TempDir(), "m.gguf"), convert.Options{Dtype: "f32"}); err == nil || !strings.Contains(err.Error(), why) {
		t.Errorf("converting %s: %v; want a refusal naming %q", ckpt, err, why)
	}
	bad := 0
	for i := range texts {
		if slices.Equal(got[i], want[i]) {
			continue
		}
		bad++
		if !strings.ContainsFunc(texts[i], func(r rune) bool { return unicode.Is(unicode.M, r) }) {
			t.Errorf("text %d %q: converted anyway, udgam-ci %v, tokenizers %v, and the text has no combining mark", i, clipText(texts[i]), got[i], want[i])
		}
	}
	if bad == 0 {
		t.Errorf("converted anyway, the scoring path equals tokenizers on all %d texts: the refusal (%s) may be lifted", len(texts), why)
	}
	t.Logf("refused (%s); converted anyway, it differs from tokenizers on %d of %d texts, each with a combining mark", why, bad, len(texts))
}

// checkAutoTokenizer runs scripts/pyref/tokenizers_check.py on the
// families' directories and requires the agreement autoTokenizerDiffers
// states.
func checkAutoTokenizer(t *testing.T, py string, families, dirs, texts []string) {
	in, err := json.Marshal(texts)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join("..", "..", "scripts", "pyref", "tokenizers_check.py"))
	cmd.Args = append(cmd.Args, dirs...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatalf("tokenizers_check.py: %v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for ; sc.Scan(); n++ {
		var r struct {
			Class, Tokenizers, Transformers string
			Texts, Equal                    int
			First                           json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || n >= len(families) {
			t.Fatalf("tokenizers_check.py line %d: %q: %v", n+1, sc.Text(), err)
		}
		family := families[n]
		why, known := autoTokenizerDiffers[family]
		switch {
		case known && r.Equal == r.Texts:
			t.Errorf("%s: AutoTokenizer (%s, transformers %s) now agrees with tokenizers on all %d texts; drop the note %q", family, r.Class, r.Transformers, r.Texts, why)
		case known:
			t.Logf("%s: AutoTokenizer (%s, transformers %s) differs from tokenizers %s on %d of %d texts (%s); first %s", family, r.Class, r.Transformers, r.Tokenizers, r.Texts-r.Equal, r.Texts, why, r.First)
		case r.Equal != r.Texts:
			t.Errorf("%s: AutoTokenizer (%s, transformers %s) differs from tokenizers %s on %d of %d texts; first %s", family, r.Class, r.Transformers, r.Tokenizers, r.Texts-r.Equal, r.Texts, r.First)
		default:
			t.Logf("%s: AutoTokenizer (%s, transformers %s) equal to tokenizers %s on all %d texts", family, r.Class, r.Transformers, r.Tokenizers, r.Texts)
		}
	}
	if n != len(families) {
		t.Fatalf("tokenizers_check.py answered for %d of %d directories: %s", n, len(families), stderr.String())
	}
}

// freshTestEnvText runs `model check-tokenizer GGUF --text FILE` with text
// in FILE and returns the exit code, stdout and stderr.
func freshTestEnvText(t *testing.T, gguf, text string) (int, string, string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	e, out, errb := freshTestEnv()
	code := run(e, []string{"model", "check-tokenizer", gguf, "--text", f})
	return code, out.String(), errb.String()
}

func clipText(s string) string {
	if len(s) > 40 {
		return strings.ToValidUTF8(s[:40], "") + "..."
	}
	return s
}

// TestCheckTokenizerPythonReference runs `model check-tokenizer --reference
// python` on a checkpoint with the reference stack's Python, and, with any
// machine's, names what is missing when the interpreter is absent.
func TestCheckTokenizerPythonReference(t *testing.T) {
	t.Parallel()
	fm := familyModel(t, "gpt2")
	e, out, errb := freshTestEnv()
	code := run(e, []string{"model", "check-tokenizer", fm.ckpt, "--reference", "python", "--python", filepath.Join(t.TempDir(), "no-python")})
	if code == 0 || !strings.Contains(errb.String(), "pip install tokenizers") {
		t.Errorf("without a Python: exit %d, stderr %q; want an error saying what to install", code, errb.String())
	}
	py := pyrefPython(t)
	e, out, errb = freshTestEnv()
	if code := run(e, []string{"model", "check-tokenizer", fm.ckpt, "--reference", "python", "--python", py}); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	want := fmt.Sprintf(" on all %d texts", len(tokcheck.Texts()))
	if !strings.Contains(out.String(), "ids equal to Hugging Face tokenizers ") || !strings.Contains(out.String(), want) {
		t.Errorf("stdout %q lacks \"ids equal to Hugging Face tokenizers VERSION%s\"", out.String(), want)
	}
	e, out, _ = freshTestEnv()
	if code := run(e, []string{"model", "check-tokenizer", fm.gguf, "--reference", "python", "--python", py, "--tokenizer", filepath.Join(hfref.Dir(t, "llama3"), "tokenizer.json")}); code != 1 || !strings.Contains(out.String(), "first difference") {
		t.Errorf("another family's tokenizer.json: exit %d, %q; want exit 1 naming the first difference", code, out.String())
	}
}

// TestWidenedTokenizers runs on every `make test`, without Python: each
// kind of tokenizer.json the converter took on under issue 26 (DeepSeek-V3's
// split, Metaspace with prepend_scheme "first") converts, and the scoring
// path gives runner/hftok's ids on the built-in set; o200k is refused,
// naming why. TestTokenizersReference checks the same files against Hugging
// Face tokenizers itself.
func TestWidenedTokenizers(t *testing.T) {
	t.Parallel()
	for _, family := range hfref.WidenedFamilies() {
		t.Run(family, func(t *testing.T) {
			fm := familyModel(t, family)
			if why := refusedFamilies[family]; why != "" {
				_, err := convert.Dir(fm.ckpt, filepath.Join(t.TempDir(), "m.gguf"), convert.Options{Dtype: "f32"})
				if err == nil || !strings.Contains(err.Error(), why) {
					t.Errorf("converting %s: %v; want a refusal naming %q", family, err, why)
				}
				return
			}
			e, out, errb := freshTestEnv()
			if code := run(e, []string{"model", "check-tokenizer", fm.gguf, "--tokenizer", filepath.Join(hfref.Dir(t, family), "tokenizer.json")}); code != 0 {
				t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), "ids equal to udgam-ci's Go reading of tokenizer.json (runner/hftok) on all") {
				t.Errorf("stdout %q", out.String())
			}
		})
	}
}
