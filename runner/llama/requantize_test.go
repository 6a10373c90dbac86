//go:build cgo

package llama_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// A quantized file is refused by Quantize, naming it and its type, and
// nothing is left behind; Requantize turns it into the new type, a model
// that loads and scores close to the file it came from: nearer to it than
// the same type quantized from the float32 original is, so its weights are
// the quantized file's rounded again, not the original's.
func TestRequantize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name+".gguf") }
	writeRandomLlama(t, path("f32"), 41)
	if err := llama.Quantize(path("f32"), path("q4_1"), "q4_1", 1); err != nil {
		t.Fatal(err)
	}
	if err := llama.Quantize(path("f32"), path("q8_0"), "q8_0", 1); err != nil {
		t.Fatal(err)
	}
	err := llama.Quantize(path("q4_1"), path("refused"), "q8_0", 1)
	if err == nil || !strings.Contains(err.Error(), "q4_1.gguf") || !strings.Contains(err.Error(), "already quantized (Q4_1)") {
		t.Errorf("Quantize of a quantized file: %v", err)
	}
	if m, _ := filepath.Glob(path("refused") + "*"); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
	if err := llama.Requantize(path("q4_1"), path("requant"), "q8_0", 1); err != nil {
		t.Fatal(err)
	}
	info, err := runner.ReadInfo(path("requant"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Dtype != "Q8_0" || info.TensorTypes["Q4_1"] != 0 || info.TensorTypes["Q8_0"] == 0 {
		t.Errorf("requantized file: dtype %s, tensors %v", info.Dtype, info.TensorTypes)
	}
	// A float32 input needs no requantizing: Requantize is Quantize there.
	if err := llama.Requantize(path("f32"), path("q8_0-again"), "q8_0", 1); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(path("q8_0"))
	b, _ := os.ReadFile(path("q8_0-again"))
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("Requantize of a float32 file differs from Quantize's (%d and %d bytes)", len(a), len(b))
	}

	bos := int32(testmodel.ByteVocab - 1)
	reqs := llamatest.RandomSequences(3, 4, 120, testmodel.ByteVocab-1, bos)
	score := func(name string) []runner.Result {
		m := llamatest.Load(t, path(name), llama.Options{Threads: 1, Parallel: 4})
		got, err := m.Score(context.Background(), reqs)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	from, requant, direct := score("q4_1"), score("requant"), score("q8_0")
	dist := func(x, y []runner.Result) (sum float64) {
		for i := range x {
			for br := range x[i] {
				for k := range x[i][br] {
					sum += math.Abs(x[i][br][k] - y[i][br][k])
				}
			}
		}
		return sum
	}
	near, far := dist(requant, from), dist(direct, from)
	t.Logf("summed |Δ log-probability| against the q4_1 file: its requantization %.4g, q8_0 from float32 %.4g", near, far)
	if near == 0 || !(near < far/2) {
		t.Errorf("requantized q8_0 is %g from its q4_1 source, q8_0 from float32 %g: want a change, and well under the other", near, far)
	}
}
