//go:build cgo

package llama_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// The test binary is built as make builds: ggml's GELU kernels evaluate
// the formula. Built without the Makefile's workspace it fails, saying how.
func TestExactGELU(t *testing.T) {
	t.Parallel()
	if err := llama.ExactGELU(); err != nil {
		t.Fatal(err)
	}
}

// In a binary with ggml's float16 GELU table (simulated here), a model
// whose graph applies GELU (GPT-2's GELU, Gemma 3's GEGLU) is refused at
// its first decode with the table's error, and a SiLU model still scores.
func TestGELUTableRefusesGELUModels(t *testing.T) {
	t.Parallel()
	_, tinyLlama := fixtures(t)
	table := errors.New("float16 GELU table in use")
	opts := llama.WithGELUCheck(llama.Options{Threads: 1, Context: 64, Parallel: 1}, func() error { return table })
	gelu := map[string]converttest.Checkpoint{
		"gpt2":   converttest.GPT2{Embd: 32, Heads: 4, Layers: 1, Positions: 64, Dtype: "F32", Seed: 1}.Checkpoint(),
		"gemma3": converttest.Gemma3{Model: converttest.TinyGemma3(), Dtype: "F32", Seed: 1}.Checkpoint(),
	}
	bos := int32(converttest.Vocab - 1)
	for name, c := range gelu {
		t.Run(name, func(t *testing.T) {
			m := llamatest.Load(t, converted(t, c), opts)
			_, err := m.Score(t.Context(), llamatest.RandomSequences(1, 1, 16, converttest.Vocab, bos))
			if !errors.Is(err, table) || !strings.Contains(err.Error(), "applies GELU") {
				t.Fatalf("scoring with the table: %v, want the table's error", err)
			}
		})
	}
	t.Run("llama", func(t *testing.T) {
		m := llamatest.Load(t, tinyLlama, opts)
		llamatest.Score(t, m, llamatest.RandomSequences(1, 1, 16, testmodel.ByteVocab, 1))
	})
}

// converted writes checkpoint c as safetensors and converts it, returning
// the GGUF's path.
func converted(t *testing.T, c converttest.Checkpoint) string {
	t.Helper()
	dir := t.TempDir()
	if err := c.Write(dir, converttest.Safetensors); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.gguf")
	if _, err := convert.Dir(dir, out, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	return out
}
