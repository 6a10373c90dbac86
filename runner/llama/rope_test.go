//go:build cgo

package llama_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// The test binary is built as make builds: ggml's rope turns by the exact
// angles. Built without the Makefile's workspace it fails, saying how.
func TestExactRope(t *testing.T) {
	t.Parallel()
	if err := llama.ExactRope(); err != nil {
		t.Fatal(err)
	}
}

// In a binary with ggml's float32 rope angles (simulated here), a model
// whose graph applies rope is refused at its first decode with the probe's
// error, and GPT-2 (learned positions, no rope) still scores.
func TestFloat32RopeRefusesRopeModels(t *testing.T) {
	t.Parallel()
	_, tinyLlama := fixtures(t)
	float32Angles := errors.New("float32 rope angles in use")
	opts := llama.WithRopeCheck(llama.Options{Threads: 1, Context: 64, Parallel: 1}, func() error { return float32Angles })

	t.Run("llama", func(t *testing.T) {
		m := llamatest.Load(t, tinyLlama, opts)
		_, err := m.Score(t.Context(), llamatest.RandomSequences(1, 1, 16, testmodel.ByteVocab, 1))
		if !errors.Is(err, float32Angles) || !strings.Contains(err.Error(), "applies rope") {
			t.Fatalf("scoring with float32 angles: %v, want the probe's error", err)
		}
	})
	t.Run("gpt2", func(t *testing.T) {
		gpt2 := converttest.GPT2{Embd: 32, Heads: 4, Layers: 1, Positions: 64, Dtype: "F32", Seed: 1}.Checkpoint()
		m := llamatest.Load(t, converted(t, gpt2), opts)
		llamatest.Score(t, m, llamatest.RandomSequences(1, 1, 16, converttest.Vocab, int32(converttest.Vocab-1)))
	})
}
