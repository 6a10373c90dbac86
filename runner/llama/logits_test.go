//go:build cgo

package llama_test

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// A step's logits over Gemma 3's 262,144-token vocabulary are never held
// whole (issue 53): a 512-token step reading every position, whole, would
// hold 512 MB of logits in the context's buffer (and as much again in the
// graph's output). Each decode asks for at most LogitRows' limit, the
// buffer llama.cpp keeps is that size, and the log-probabilities are those
// of steps too small to be split.
func TestLogitsHeldInParts(t *testing.T) {
	t.Parallel()
	const vocab = 262144
	ref, err := testmodel.RandomLlama(53, testmodel.Shape{Layers: 1, Embd: 32, Heads: 2, KVHeads: 1, FFN: 64, Vocab: vocab, Context: 1024, TiedOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wide-vocab.gguf")
	if err := testmodel.WriteLlamaGGUF(path, ref); err != nil {
		t.Fatal(err)
	}
	bos := int32(testmodel.ByteVocab - 1)
	// Two sequences read at every position (Fresh Text's shape: more reads
	// in one step than a part holds) and probe-shaped requests.
	reqs := llamatest.RandomSequences(53, 2, 300, testmodel.ByteVocab-1, bos)
	reqs = append(reqs, llamatest.ProbeLike(rand.New(rand.NewPCG(53, 1)), 6, bos)...)

	// CPUOnly: the buffer is then malloc's, which LogitRows measures.
	m := llamatest.Load(t, path, llama.Options{Threads: 1, Batch: llama.DefaultBatch, Parallel: 4, CPUOnly: true})
	got := llamatest.Score(t, m, reqs)
	limit, peak, buf := llama.LogitRows(m)
	if limit >= llama.DefaultBatch || limit < 1 {
		t.Fatalf("a decode may ask for %d rows of %d logits: a %d-token step is held whole", limit, vocab, llama.DefaultBatch)
	}
	if peak < 1 || peak > limit {
		t.Fatalf("a decode asked for %d rows of logits, at most %d allowed", peak, limit)
	}
	rowBytes := int64(4 * vocab)
	switch {
	case buf < 0:
		t.Logf("the C library does not say how large the logits buffer is; rows per decode checked only")
	case buf < int64(peak)*rowBytes:
		t.Fatalf("logits buffer of %d bytes for %d rows of %d bytes", buf, peak, rowBytes)
	case buf > int64(limit)*rowBytes+1<<20:
		t.Fatalf("logits buffer of %.1f MB, more than %d rows (%.1f MB)", float64(buf)/1e6, limit, float64(int64(limit)*rowBytes)/1e6)
	}
	t.Logf("%d rows of logits per decode at most (%d asked for), buffer %.1f MB", limit, peak, float64(buf)/1e6)

	// The same requests in steps no larger than a part, and one at a time.
	small := llamatest.Load(t, path, llama.Options{Threads: 1, Batch: limit / 2, Parallel: 4, CPUOnly: true})
	if d := llamatest.MaxDiff(t, got, llamatest.Score(t, small, reqs)); d > 1e-4 {
		t.Fatalf("steps decoded in parts differ from small steps by %g nats", d)
	}
	for i := range reqs[:3] {
		if d := llamatest.MaxDiff(t, got[i:i+1], llamatest.Score(t, small, reqs[i:i+1])); d > 1e-4 {
			t.Fatalf("request %d alone differs by %g nats", i, d)
		}
	}

	// An audit's pair decodes both models a part at a time too: KL exactly
	// 0 against the same file, and the log-probabilities scored alone (its
	// log-sum-exp sums exponentials in double, not float: 1e-6).
	art := llamatest.Load(t, path, llama.Options{Threads: 1, Batch: llama.DefaultBatch, Parallel: 4, CPUOnly: true})
	paired := scorePair(t, m, art, reqs)
	_, artPeak, _ := llama.LogitRows(art)
	if artPeak < 1 || artPeak > limit {
		t.Fatalf("the pair's artifact asked for %d rows of logits in a decode, at most %d allowed", artPeak, limit)
	}
	for i := range paired {
		for br := range paired[i].KL {
			for k, kl := range paired[i].KL[br] {
				if kl != 0 || paired[i].Ref[br][k] != paired[i].Art[br][k] || math.Abs(paired[i].Ref[br][k]-got[i][br][k]) > 1e-6 {
					t.Fatalf("pair, request %d branch %d read %d: KL %g, log-probability %g, alone %g", i, br, k, kl, paired[i].Ref[br][k], got[i][br][k])
				}
			}
		}
	}
}
