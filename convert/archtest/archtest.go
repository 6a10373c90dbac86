//go:build cgo

package archtest

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// Tolerance is the largest difference in nats per token allowed between
// llama.cpp on a converted model and its float64 reference.
const Tolerance = 1e-4

// SeqLen is the length of the sequences compared, the default scoring window.
const SeqLen = 2048

// Case is one checkpoint and its reference.
type Case struct {
	Checkpoint converttest.Checkpoint
	// Reference builds the float64 forward pass from the checkpoint's
	// tensors (by Hugging Face name, exactly as stored).
	Reference func(weights map[string][]float32) (*testmodel.Reference, error)
	// Formats to convert from; all of converttest.Formats when nil.
	Formats []converttest.Format
	// Seqs is how many SeqLen-token sequences to compare (default 1).
	Seqs int
	// Load overrides the llama.cpp options (threads, context) when set.
	Load *llama.Options
}

// Exact converts the checkpoint from each format to an f32 GGUF (every
// source value exactly), scores Seqs random sequences of SeqLen tokens
// through llama.cpp, and fails the test where any token's log-probability
// differs from the reference by more than Tolerance. It returns the
// largest difference met and the path of one converted GGUF.
func Exact(t *testing.T, c Case) (worst float64, gguf string) {
	t.Helper()
	ref, err := c.Reference(c.Checkpoint.Values())
	if err != nil {
		t.Fatal(err)
	}
	formats := c.Formats
	if formats == nil {
		formats = converttest.Formats
	}
	seqs := max(c.Seqs, 1)
	reqs := llamatest.RandomSequences(1, seqs, SeqLen, ref.Vocab, int32(ref.Vocab-1))
	want := llamatest.Score(t, ref, reqs)
	opts := llama.Options{Threads: 1, Context: seqs * SeqLen, Batch: llama.DefaultBatch, Parallel: seqs}
	if c.Load != nil {
		opts = *c.Load
	}
	for _, f := range formats {
		dir := t.TempDir()
		if err := c.Checkpoint.Write(dir, f); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "model.gguf")
		_, err := convert.Dir(dir, out, convert.Options{Dtype: "f32"})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		m := llamatest.Load(t, out, opts)
		got := llamatest.Score(t, m, reqs)
		m.Close()
		d := llamatest.MaxDiff(t, got, want)
		t.Logf("%s, %s source: llama.cpp vs float64 reference over %d x %d tokens: %.3g nats at most", f, c.Checkpoint.Dtype, seqs, SeqLen, d)
		if d > Tolerance {
			t.Errorf("%s: llama.cpp and the float64 reference differ by %g nats (at most %g allowed)", f, d, Tolerance)
		}
		worst = max(worst, d)
		gguf = out
	}
	return worst, gguf
}

// Invariance runs llamatest.Invariance on a converted GGUF with requests
// shaped like the scorers': whole random sequences and shared prompts with
// several choices, ids below vocab, BOS the vocabulary's last id.
func Invariance(t *testing.T, gguf string, vocab int) {
	t.Helper()
	reqs := llamatest.RandomSequences(2, 2, 100, vocab, int32(vocab-1))
	reqs = append(reqs, llamatest.ProbeLike(rand.New(rand.NewPCG(3, 3)), 8, int32(vocab-1))...)
	llamatest.Invariance(t, gguf, reqs)
}

// OutputDtypes converts the checkpoint (in its first format) to each of
// dtypes, scores one sequence of 256 tokens through llama.cpp and returns
// each dtype's mean absolute difference from the reference per token. A
// conversion, load or scoring error fails the test. Below float32 the
// differences are not held to Tolerance: ggml rounds activations to the
// weights' type in its matrix products; the caller bounds them.
func OutputDtypes(t *testing.T, c Case, dtypes ...string) map[string]float64 {
	t.Helper()
	ref, err := c.Reference(c.Checkpoint.Values())
	if err != nil {
		t.Fatal(err)
	}
	format := converttest.Safetensors
	if len(c.Formats) > 0 {
		format = c.Formats[0]
	}
	dir := t.TempDir()
	if err := c.Checkpoint.Write(dir, format); err != nil {
		t.Fatal(err)
	}
	const n = 256
	reqs := llamatest.RandomSequences(4, 1, n, ref.Vocab, int32(ref.Vocab-1))
	want := llamatest.Score(t, ref, reqs)
	out := map[string]float64{}
	for _, dtype := range dtypes {
		path := filepath.Join(t.TempDir(), dtype+".gguf")
		if _, err := convert.Dir(dir, path, convert.Options{Dtype: dtype}); err != nil {
			t.Fatalf("%s: %v", dtype, err)
		}
		m := llamatest.Load(t, path, llama.Options{Threads: 1, Context: n})
		got := llamatest.Score(t, m, reqs)
		m.Close()
		var sum float64
		for k, v := range got[0][0] {
			sum += math.Abs(v - want[0][0][k])
		}
		out[dtype] = sum / float64(len(got[0][0]))
		t.Logf("%s output: llama.cpp vs float64 reference over %d tokens: %.3g nats on average, %.3g at most",
			dtype, n, out[dtype], llamatest.MaxDiff(t, got, want))
	}
	return out
}
