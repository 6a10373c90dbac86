package runner_test

import (
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
)

// The fingerprint is the same for files that load as one model (written
// twice, renamed, given an author, their tensors laid out anew) and
// differs when anything llama.cpp computes with differs: one tensor's
// data, a setting's value, a value's type. The file's SHA-256, the naive
// fingerprint, would call a renamed model changed.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name+".gguf") }
	b := testmodel.RandomBigram(3)
	table := b.Table()
	table[7][9], table[7][10] = table[7][10], table[7][9] // one row of the output tensor changes
	changed, err := testmodel.NewBigram(table)
	if err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func(string) error{
		"a":       func(p string) error { return testmodel.WriteBigramGGUF(p, b) },
		"again":   func(p string) error { return testmodel.WriteBigramGGUF(p, b) },
		"renamed": func(p string) error { return testmodel.WriteBigramGGUF(p, b, testmodel.WithName("bigram v2")) },
		"tensor":  func(p string) error { return testmodel.WriteBigramGGUF(p, changed) },
	} {
		if err := write(path(name)); err != nil {
			t.Fatal(err)
		}
	}
	g, err := testmodel.ReadGGUF(path("a"))
	if err != nil {
		t.Fatal(err)
	}
	rewrites := map[string]func(ggml.KV){
		"relaid":    nil,
		"authored":  func(kv ggml.KV) { kv["general.author"] = "someone"; kv["general.base_model.0.name"] = "x" },
		"rope":      func(kv ggml.KV) { kv["llama.rope.freq_base"] = float32(20000) },
		"retyped":   func(kv ggml.KV) { kv["llama.context_length"] = uint64(kv.Uint("context_length")) },
		"bos":       func(kv ggml.KV) { kv["tokenizer.ggml.add_bos_token"] = !kv.Bool("tokenizer.ggml.add_bos_token") },
		"extra key": func(kv ggml.KV) { kv["general.unknown_to_us"] = "x" },
	}
	for name, edit := range rewrites {
		if err := g.Rewrite(path(name), edit); err != nil {
			t.Fatal(err)
		}
	}
	info := map[string]runner.Info{}
	for _, name := range []string{"a", "again", "renamed", "tensor", "relaid", "authored", "rope", "retyped", "bos", "extra key"} {
		i, err := runner.ReadInfo(path(name))
		if err != nil {
			t.Fatal(err)
		}
		if len(i.Fingerprint) != 64 {
			t.Fatalf("%s: fingerprint %q", name, i.Fingerprint)
		}
		info[name] = i
	}
	if info["renamed"].SHA256 == info["a"].SHA256 {
		t.Fatal("renaming did not change the file: the test shows nothing")
	}
	for _, same := range []string{"again", "renamed", "relaid", "authored"} {
		if info[same].Fingerprint != info["a"].Fingerprint {
			t.Errorf("%s: fingerprint differs from the same model's", same)
		}
	}
	for _, other := range []string{"tensor", "rope", "retyped", "bos", "extra key"} {
		if info[other].Fingerprint == info["a"].Fingerprint {
			t.Errorf("%s: fingerprint equals the original's", other)
		}
	}
	fp, err := runner.Fingerprint(path("a"))
	if err != nil || fp != info["a"].Fingerprint {
		t.Errorf("Fingerprint = %q, %v; ReadInfo's %q", fp, err, info["a"].Fingerprint)
	}
}

// BenchmarkFingerprint times the fingerprint of the GGUF named by
// UDGAM_BENCH_GGUF beside the file's SHA-256, which ReadInfo also takes:
// the fingerprint is the second pass over the file that ReadInfo adds.
func BenchmarkFingerprint(b *testing.B) {
	path := os.Getenv("UDGAM_BENCH_GGUF")
	if path == "" {
		b.Skip("UDGAM_BENCH_GGUF names no GGUF file")
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fingerprint", func(b *testing.B) {
		b.SetBytes(st.Size())
		for b.Loop() {
			if _, err := runner.Fingerprint(path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(st.Size())
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			h := sha256.New()
			if _, err := io.Copy(h, f); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}
