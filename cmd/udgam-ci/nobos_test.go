//go:build cgo

package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/reference/hfref"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// splitFirstDocs start with a character that GPT-2's or Qwen's byte-level
// tokenizer splits between tokens (the first two as in issue 43's report),
// one with a character Qwen's NFC changes, and one plain.
var splitFirstDocs = []fresh.Document{
	{ID: "devanagari", Text: "यह"},
	{ID: "devanagari-sentence", Text: "यह वाक्य हिंदी में है।"},
	{ID: "digits", Text: "१९४७ में भारत"},
	{ID: "emoji", Text: "🦜 parrots talk"},
	{ID: "han", Text: "鱻 fish"},
	{ID: "han-astral", Text: "𠜎 is a rare Han character."},
	{ID: "normalized", Text: "\u0958\u0932\u092e and more"},
	{ID: "plain", Text: "Parrots talk."},
}

// TestNoBOSSplitFirstCharacter (issue 43): without BOS the first token is
// not scored and its own bytes are left out of the byte count, also when it
// ends inside a character. A Pythia-class model (GPTNeoXForCausalLM) with
// GPT-2's tokenizer and no BOS, and a Qwen3 model with Qwen's, are
// converted and scored by the binary; every document's bytes must be
// transformers' (the pinned reference stack's scripts/crosscheck/refscore.py
// on these files: the token's byte-level piece, or where Qwen's NFC changed
// the character, its original bytes from the offsets), its tokens and bits
// those of the float64 forward pass over transformers.js's ids.
func TestNoBOSSplitFirstCharacter(t *testing.T) {
	t.Parallel()
	needEngine(t)
	// bytes counted and tokens scored, by document, from transformers 5.
	type counts struct{ bytes, tokens int }
	for _, tt := range []struct {
		name   string
		family string
		build  func(t *testing.T, tokDir string, vocab int) (converttest.Checkpoint, *testmodel.Reference)
		want   map[string]counts
	}{
		{"pythia-gpt2", "gpt2", buildNoBOSPythia, map[string]counts{
			"devanagari": {4, 3}, "devanagari-sentence": {56, 34}, "digits": {33, 20}, "emoji": {15, 5},
			"han": {7, 3}, "han-astral": {28, 9}, "normalized": {16, 7}, "plain": {10, 3}}},
		{"qwen3", "qwen3", buildQwen3, map[string]counts{
			"devanagari": {3, 1}, "devanagari-sentence": {55, 19}, "digits": {33, 15}, "emoji": {14, 4},
			"han": {6, 2}, "han-astral": {27, 8}, "normalized": {15, 6}, "plain": {10, 3}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tokDir := hfref.Dir(t, tt.family)
			if tt.family == "gpt2" {
				tokDir = withoutBOS(t, tokDir)
			}
			vocab, err := converttest.TokenizerSize(tokDir)
			if err != nil {
				t.Fatal(err)
			}
			c, ref := tt.build(t, tokDir, vocab)
			dir := t.TempDir()
			ckpt := filepath.Join(dir, "ckpt")
			if err := c.Write(ckpt, converttest.Safetensors); err != nil {
				t.Fatal(err)
			}
			gguf := filepath.Join(dir, "m.gguf")
			if code, _, stderr := runBinary(t, dir, nil, "model", "convert", ckpt, "--out", gguf, "--dtype", "f32"); code != 0 {
				t.Fatalf("model convert: exit %d: %s", code, stderr)
			}
			data := writeDocs(t, dir, splitFirstDocs)
			out := filepath.Join(dir, "fresh.jsonl")
			if code, _, stderr := runBinary(t, dir, nil, "score", "fresh", "--model", gguf, "--data", data, "--out", out, "--threads", "1", "--gpu", "cpu"); code != 0 {
				t.Fatalf("score fresh: exit %d: %s", code, stderr)
			}
			r, err := runfile.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if r.Header.Settings.AddBOS {
				t.Fatalf("scored with BOS; the tokenizer has none")
			}
			texts := make([]string, len(splitFirstDocs))
			for i, d := range splitFirstDocs {
				texts[i] = d.Text
			}
			ids := hfref.Encode(t, tokDir, texts)
			if py := os.Getenv("UDGAM_PYREF_PYTHON"); py != "" {
				// make crosscheck-tokenizers: the counts above are still
				// transformers' own.
				for i, c := range transformersCounts(t, py, tokDir, texts) {
					if w := tt.want[splitFirstDocs[i].ID]; c != [2]int{w.bytes, w.tokens} {
						t.Errorf("%s: transformers counts %d bytes, %d tokens; the test says %d, %d", splitFirstDocs[i].ID, c[0], c[1], w.bytes, w.tokens)
					}
				}
			}
			if len(r.Docs) != len(splitFirstDocs) {
				t.Fatalf("%d records, want %d", len(r.Docs), len(splitFirstDocs))
			}
			for i, d := range r.Docs {
				doc := splitFirstDocs[i]
				want := tt.want[doc.ID]
				if d.ID != doc.ID || d.Bytes != want.bytes || d.Tokens != want.tokens {
					t.Errorf("%s %q: %d bytes, %d tokens; want %d bytes (%d of %d left out with the first token), %d tokens",
						d.ID, doc.Text, d.Bytes, d.Tokens, want.bytes, len(doc.Text)-want.bytes, len(doc.Text), want.tokens)
					continue
				}
				if len(ids[i])-1 != want.tokens {
					t.Fatalf("%s: transformers.js gives %d ids, transformers %d", doc.ID, len(ids[i]), want.tokens+1)
				}
				var nats float64
				for _, lp := range llamatest.Score(t, ref, []runner.Request{llamatest.Whole(ids[i])})[0][0] {
					nats += lp
				}
				if diff := math.Abs(d.Bits*math.Ln2 + nats); diff > 1e-4*float64(want.tokens) {
					t.Errorf("%s: %.6f nats, float64 reference %.6f", doc.ID, -d.Bits*math.Ln2, nats)
				}
			}
		})
	}
}

// buildNoBOSPythia is a tiny GPTNeoXForCausalLM (Pythia's class and
// options) around the tokenizer in tokDir, and its float64 reference.
func buildNoBOSPythia(t *testing.T, tokDir string, vocab int) (converttest.Checkpoint, *testmodel.Reference) {
	m := converttest.GPTNeoX{Hidden: 32, Heads: 2, Layers: 2, Intermediate: 64, RotaryPct: 0.25, Parallel: true, Dtype: "BF16", Seed: 43, VocabSize: vocab}
	c := m.Checkpoint()
	c.Tokenizer = tokDir
	config, err := json.Marshal(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := testmodel.NewGPTNeoX(config, c.Values())
	if err != nil {
		t.Fatal(err)
	}
	return c, ref
}

// buildQwen3 is a tiny Qwen3ForCausalLM around the tokenizer in tokDir
// (Qwen's has no BOS), and its float64 reference.
func buildQwen3(t *testing.T, tokDir string, vocab int) (converttest.Checkpoint, *testmodel.Reference) {
	m := converttest.TinyDecoder()
	m.QKNorm, m.HeadDim, m.Tied, m.Vocab = true, 32, true, vocab
	d := converttest.Decoder{Class: "Qwen3ForCausalLM", ModelType: "qwen3", Model: m, Dtype: "BF16", Seed: 43}
	c := d.Checkpoint()
	c.Tokenizer = tokDir
	ref, err := m.Reference(c.Values())
	if err != nil {
		t.Fatal(err)
	}
	return c, ref
}

// withoutBOS copies the tokenizer files in dir with bos_token null, as a
// tokenizer without BOS says (Pythia's GPT-2-style files in the report).
func withoutBOS(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	for _, name := range converttest.TokenizerFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if name == "tokenizer_config.json" || name == "special_tokens_map.json" {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			m["bos_token"] = nil
			if b, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// transformersCounts runs the crosscheck's reference (scripts/crosscheck/
// refscore.py) with the pinned stack's Python py on the tokenizer in dir:
// each text's bytes and tokens without BOS.
func transformersCounts(t *testing.T, py, dir string, texts []string) [][2]int {
	t.Helper()
	const script = `import json, sys
sys.path.insert(0, sys.argv[1])
import refscore
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[2])
print(json.dumps([[len(s.encode("utf-8")) - refscore.first_token_bytes(tok, s), len(refscore.encode(tok, s)) - 1] for s in json.load(sys.stdin)]))
`
	in, err := json.Marshal(texts)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", script, filepath.Join("..", "..", "scripts", "crosscheck"), dir)
	cmd.Env = append(os.Environ(), "HF_HUB_OFFLINE=1", "TRANSFORMERS_VERBOSITY=error")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("refscore.py on %s: %v\n%s", dir, err, stderr.String())
	}
	var counts [][2]int
	if err := json.Unmarshal(out, &counts); err != nil || len(counts) != len(texts) {
		t.Fatalf("refscore.py on %s: %q: %v", dir, out, err)
	}
	return counts
}
