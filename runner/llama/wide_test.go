//go:build cgo

package llama_test

import (
	"path/filepath"
	"testing"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// A model wide enough that its matrix products take scripts/engine.sh's
// gemm.c (128 rows or more: every projection, the output head, attention's
// scores over 400 positions) matches the float64 forward pass as the
// narrow fixtures do, whose products mostly stay with tinyBLAS.
func TestWideTransformerMatchesReference(t *testing.T) {
	t.Parallel()
	ref, err := testmodel.RandomLlama(5, testmodel.Shape{Layers: 2, Embd: 256, Heads: 4, KVHeads: 2, FFN: 512, Vocab: testmodel.ByteVocab, Context: 512})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wide.gguf")
	if err := testmodel.WriteLlamaGGUF(path, ref); err != nil {
		t.Fatal(err)
	}
	m := llamatest.Load(t, path, llama.Options{Threads: 2, Context: 512})
	reqs := llamatest.RandomSequences(2, 1, 400, testmodel.ByteVocab, int32(testmodel.ByteVocab-1))
	matchesReference(t, m, ref, reqs)
}
