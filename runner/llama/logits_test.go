//go:build cgo

package llama_test

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// A step's logits over Gemma 3's 262,144-token vocabulary are never held
// whole (issue 53): a 512-token step reading every position, whole, would
// hold 512 MB of logits. Where the output head stays in llama.cpp's graph
// (a float32 head), each decode asks for at most LogitRows' limit and the
// buffer llama.cpp keeps is that size; where it is taken out of the graph
// (a quantized head on x86 with AVX2), whole steps are decoded, the
// context keeps only hidden states and the panels held are at most
// threads x HeadPanel rows. Either way the log-probabilities are those of
// steps too small to be split, bit for bit where the head is outside.
func TestLogitsHeldInParts(t *testing.T) {
	t.Parallel()
	const vocab, embd = 262144, 32
	ref, err := testmodel.RandomLlama(53, testmodel.Shape{Layers: 1, Embd: embd, Heads: 2, KVHeads: 1, FFN: 64, Vocab: vocab, Context: 1024, TiedOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f32, q8 := filepath.Join(dir, "wide-vocab.gguf"), filepath.Join(dir, "wide-vocab-q8_0.gguf")
	if err := testmodel.WriteLlamaGGUF(f32, ref); err != nil {
		t.Fatal(err)
	}
	if err := llama.Quantize(f32, q8, "q8_0", 1); err != nil {
		t.Fatal(err)
	}
	bos := int32(testmodel.ByteVocab - 1)
	// Two sequences read at every position (Fresh Text's shape: more reads
	// in one step than a part holds) and probe-shaped requests.
	reqs := llamatest.RandomSequences(53, 2, 300, testmodel.ByteVocab-1, bos)
	reqs = append(reqs, llamatest.ProbeLike(rand.New(rand.NewPCG(53, 1)), 6, bos)...)
	// CPUOnly: the buffer is then malloc's, which LogitRows measures.
	opts := llama.Options{Threads: 1, Batch: llama.DefaultBatch, Parallel: 4, CPUOnly: true}
	rowBytes := int64(4 * vocab)

	for _, tc := range []struct {
		name, path string
		outside    bool // the head is taken out of the graph
	}{
		{"float32 head", f32, false},
		{"q8_0 head", q8, llama.VectorBuild()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := llamatest.Load(t, tc.path, opts)
			got := llamatest.Score(t, m, reqs)
			limit, peak, buf := llama.LogitRows(m)
			if limit >= llama.DefaultBatch || limit < 1 {
				t.Fatalf("a decode may ask for %d rows of %d logits: a %d-token step is held whole", limit, vocab, llama.DefaultBatch)
			}
			outside, held := llama.HeadOutside(m)
			if outside != tc.outside {
				t.Fatalf("head outside the graph: %v, want %v", outside, tc.outside)
			}
			// What the context's buffer may hold: rows of logits, or of
			// hidden states where the head is outside.
			bufLimit, exact := int64(limit)*rowBytes+1<<20, 1e-4
			if outside {
				if peak <= limit {
					t.Fatalf("the head is outside the graph, yet decodes asked for at most %d rows: steps were split", peak)
				}
				if most := int64(opts.Threads) * llama.HeadPanel * llama.DefaultBatch * 4; held < 1 || held > most || held > int64(limit)*rowBytes {
					t.Fatalf("the head holds %d bytes of logits, want at most %d (and %d)", held, most, int64(limit)*rowBytes)
				}
				bufLimit, exact = int64(llama.DefaultBatch)*4*embd+1<<20, 0
			} else if peak < 1 || peak > limit {
				t.Fatalf("a decode asked for %d rows of logits, at most %d allowed", peak, limit)
			}
			switch {
			case buf < 0:
				t.Logf("the C library does not say how large the logits buffer is; rows per decode checked only")
			case !outside && buf < int64(peak)*rowBytes:
				t.Fatalf("logits buffer of %d bytes for %d rows of %d bytes", buf, peak, rowBytes)
			case buf > bufLimit:
				t.Fatalf("logits buffer of %.1f MB, more than %.1f MB", float64(buf)/1e6, float64(bufLimit)/1e6)
			}
			t.Logf("head outside: %v; %d rows per decode at most (%d asked for), buffer %.1f MB, panels %.1f MB", outside, limit, peak, float64(buf)/1e6, float64(held)/1e6)

			// The same requests in steps no larger than a part, and one at
			// a time.
			small := llamatest.Load(t, tc.path, llama.Options{Threads: 1, Batch: limit / 2, Parallel: 4, CPUOnly: true})
			if d := llamatest.MaxDiff(t, got, llamatest.Score(t, small, reqs)); d > exact {
				t.Fatalf("steps decoded whole or in parts differ from small steps by %g nats", d)
			}
			for i := range reqs[:3] {
				if d := llamatest.MaxDiff(t, got[i:i+1], llamatest.Score(t, small, reqs[i:i+1])); d > exact {
					t.Fatalf("request %d alone differs by %g nats", i, d)
				}
			}

			// An audit's pair holds no more: KL exactly 0 against the same
			// file, and the log-probabilities scored alone (its log-sum-exp
			// sums exponentials in double, not float: 1e-6).
			art := llamatest.Load(t, tc.path, opts)
			paired := scorePair(t, m, art, reqs)
			_, artPeak, _ := llama.LogitRows(art)
			if _, artHeld := llama.HeadOutside(art); !outside && (artPeak < 1 || artPeak > limit) || artHeld > int64(limit)*rowBytes {
				t.Fatalf("the pair's artifact asked for %d rows of logits in a decode (at most %d allowed), holds %d bytes", artPeak, limit, artHeld)
			}
			checkSamePair(t, paired, got, 1e-6)
		})
	}

	if !llama.VectorBuild() {
		return
	}
	// The head outside the graph gives the graph's logits bit for bit (a
	// pair of the two: KL 0, the same log-probabilities), and its
	// log-probabilities do not depend on the threads.
	t.Run("outside against graph", func(t *testing.T) {
		t.Parallel()
		out := llamatest.Load(t, q8, opts)
		in := llamatest.Load(t, q8, llama.WithGraphHead(opts))
		if o, _ := llama.HeadOutside(in); o {
			t.Fatal("WithGraphHead left the head outside the graph")
		}
		got := llamatest.Score(t, out, reqs)
		// The log-sum-exps differ: a panel's exponentials are of its own
		// maximum's differences, rounded in float32 (TestPanelLogSumExp).
		if d := llamatest.MaxDiff(t, got, llamatest.Score(t, in, reqs)); d > 1e-7 {
			t.Fatalf("the head outside the graph differs from the graph's by %g nats", d)
		}
		threads := opts
		threads.Threads = 3
		if d := llamatest.MaxDiff(t, got, llamatest.Score(t, llamatest.Load(t, q8, threads), reqs)); d != 0 {
			t.Fatalf("3 threads differ from 1 by %g nats", d)
		}
		checkSamePair(t, scorePair(t, out, in, reqs), got, 1e-6)
	})
}

// checkSamePair fails unless every read of paired has KL exactly 0 and the
// same log-probability for both models, within tol of alone.
func checkSamePair(t *testing.T, paired []runner.PairResult, alone []runner.Result, tol float64) {
	t.Helper()
	for i := range paired {
		for br := range paired[i].KL {
			for k, kl := range paired[i].KL[br] {
				if kl != 0 || paired[i].Ref[br][k] != paired[i].Art[br][k] || math.Abs(paired[i].Ref[br][k]-alone[i][br][k]) > tol {
					t.Fatalf("pair, request %d branch %d read %d: KL %g, log-probability %g and %g, alone %g", i, br, k, kl, paired[i].Ref[br][k], paired[i].Art[br][k], alone[i][br][k])
				}
			}
		}
	}
}

// The head leaves the graph only where the logits are its product alone:
// a Gemma 3 whose logits are softcapped after the head keeps it there,
// the same model uncapped takes it out, and each scores as the graph does.
func TestHeadOutsideOnlyWherePlain(t *testing.T) {
	t.Parallel()
	if !llama.VectorBuild() {
		t.Skip("no x86 kernels in this build: every head stays in the graph")
	}
	for _, tc := range []struct {
		name    string
		softcap float64
		outside bool
	}{{"plain", 0, true}, {"softcapped", 30, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := converttest.TinyGemma3()
			g.FinalLogitSoftcap = tc.softcap
			f32 := converted(t, converttest.Gemma3{Model: g, Dtype: "F32", Seed: 1}.Checkpoint())
			q8 := filepath.Join(t.TempDir(), "q8_0.gguf")
			if err := llama.Quantize(f32, q8, "q8_0", 1); err != nil {
				t.Fatal(err)
			}
			opts := llama.Options{Threads: 1, Context: 512, Parallel: 2, CPUOnly: true}
			m := llamatest.Load(t, q8, opts)
			if o, _ := llama.HeadOutside(m); o != tc.outside {
				t.Fatalf("head outside the graph: %v, want %v", o, tc.outside)
			}
			reqs := llamatest.RandomSequences(2, 2, 150, converttest.Vocab, int32(converttest.Vocab-1))
			got := llamatest.Score(t, m, reqs)
			if d := llamatest.MaxDiff(t, got, llamatest.Score(t, llamatest.Load(t, q8, llama.WithGraphHead(opts)), reqs)); d > 1e-7 {
				t.Fatalf("differs from the head in the graph by %g nats", d)
			}
		})
	}
}
