//go:build cgo

package llamatest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
)

// Load loads path, closing it when the test ends.
func Load(t testing.TB, path string, opts llama.Options) *llama.Model {
	t.Helper()
	m, err := llama.Load(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// Texts are short and long texts of several scripts.
var Texts = []string{
	"The quick brown fox jumps over the lazy dog.",
	"Bits per byte: naïve café, 東京, Ελληνικά, emoji 🙂!",
	"a",
	strings.Repeat("long context makes attention matter; ", 12),
}

// TextRequests asks for every position of each text after bos.
func TextRequests(t testing.TB, tok runner.Tokenizer, bos int32, texts []string) []runner.Request {
	t.Helper()
	var reqs []runner.Request
	for _, s := range texts {
		ids, err := tok.Tokenize(s)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, Whole(append([]int32{bos}, ids...)))
	}
	return reqs
}

// Whole is a request for every position of seq.
func Whole(seq []int32) runner.Request {
	br := runner.Branch{Tokens: seq}
	for p := 1; p < len(seq); p++ {
		br.Positions = append(br.Positions, p)
	}
	return runner.Request{Branches: []runner.Branch{br}}
}

// RandomSequences returns n requests for every position of a sequence of
// length random ids in [0, vocab) after bos.
func RandomSequences(seed uint64, n, length, vocab int, bos int32) []runner.Request {
	rng := rand.New(rand.NewPCG(seed, 3))
	var reqs []runner.Request
	for range n {
		seq := make([]int32, length)
		seq[0] = bos
		for i := 1; i < length; i++ {
			seq[i] = int32(rng.IntN(vocab))
		}
		reqs = append(reqs, Whole(seq))
	}
	return reqs
}

// ProbeLike builds requests with a shared prompt after bos and several
// choices, the shape the probe scorer sends; ids are printable bytes. As
// probe items do, prompts begin with one of a few templates and many
// choices with the same token, so starts shared across requests and
// branches are exercised.
func ProbeLike(rng *rand.Rand, n int, bos int32) []runner.Request {
	var reqs []runner.Request
	tok := func(k int) []int32 {
		s := make([]int32, k)
		for i := range s {
			s[i] = int32(32 + rng.IntN(90))
		}
		return s
	}
	templates := [][]int32{tok(3), tok(6), tok(9)}
	for range n {
		prompt := append([]int32{bos}, templates[rng.IntN(len(templates))]...)
		r := runner.Request{Prefix: append(prompt, tok(10+rng.IntN(40))...)}
		lead := tok(1)
		for range 2 + rng.IntN(3) {
			br := runner.Branch{Tokens: tok(1 + rng.IntN(6))}
			if rng.IntN(2) == 0 {
				br.Tokens = append(lead, br.Tokens[1:]...)
			}
			for p := len(r.Prefix); p < len(r.Prefix)+len(br.Tokens); p++ {
				br.Positions = append(br.Positions, p)
			}
			r.Branches = append(r.Branches, br)
		}
		reqs = append(reqs, r)
	}
	return reqs
}

// MaxDiff is the largest difference between two results of the same
// requests.
func MaxDiff(t testing.TB, a, b []runner.Result) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d vs %d results", len(a), len(b))
	}
	worst := 0.0
	for i := range a {
		if len(a[i]) != len(b[i]) {
			t.Fatalf("request %d: %d vs %d branches", i, len(a[i]), len(b[i]))
		}
		for br := range a[i] {
			if len(a[i][br]) != len(b[i][br]) {
				t.Fatalf("request %d branch %d: %d vs %d values", i, br, len(a[i][br]), len(b[i][br]))
			}
			for k := range a[i][br] {
				d := math.Abs(a[i][br][k] - b[i][br][k])
				if math.IsNaN(d) {
					d = math.Inf(1)
				}
				worst = math.Max(worst, d)
			}
		}
	}
	return worst
}

// Score scores reqs with s, failing the test on error.
func Score(t testing.TB, s runner.Scorer, reqs []runner.Request) []runner.Result {
	t.Helper()
	res, err := s.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Invariance checks that the model at path gives the same log-probabilities
// (to 1e-4 nats) for reqs whatever the threads, batch size, number of
// packed sequences, context size and cache layout, alone or packed, with
// the prompt shared or not; and exactly the same on a repeated run.
func Invariance(t *testing.T, path string, reqs []runner.Request) {
	t.Helper()
	const tol = 1e-4
	base := Load(t, path, llama.Options{Threads: 1, Batch: llama.DefaultBatch, Parallel: llama.DefaultParallel})
	ref := Score(t, base, reqs)
	if d := MaxDiff(t, ref, Score(t, base, reqs)); d != 0 {
		t.Fatalf("a repeated run differs by %g", d)
	}
	unshared := Score(t, base, runner.Unshare(reqs))
	if d := MaxDiff(t, ref, runner.Reshare(reqs, unshared)); d > tol {
		t.Fatalf("prefix sharing changes log-probabilities by %g", d)
	}
	// One case has two threads, scoring everything packed once: threads
	// split ggml's rows, not a sum's order, and every decode on two threads
	// in tests side by side on 2 cores spins.
	for _, o := range []llama.Options{
		{Threads: 2, Batch: llama.DefaultBatch, Parallel: llama.DefaultParallel},
		{Threads: 1, Batch: 7, Parallel: 4},
		{Threads: 1, Batch: 64, Parallel: 8, Context: 512},
		{Threads: 1, Batch: 2048, Parallel: 64, Context: 8192},
		{Threads: 1, Batch: 512, Parallel: 8, Context: 512, SeparateCaches: true},
	} {
		m := Load(t, path, o)
		if d := MaxDiff(t, ref, Score(t, m, reqs)); d > tol {
			t.Fatalf("%+v changes log-probabilities by %g", o, d)
		}
		if o.Threads > 1 {
			m.Close()
			continue
		}
		// One request at a time: no packing at all.
		for i := range reqs[:min(6, len(reqs))] {
			if d := MaxDiff(t, ref[i:i+1], Score(t, m, reqs[i:i+1])); d > tol {
				t.Fatalf("%+v: request %d alone differs by %g", o, i, d)
			}
		}
		m.Close()
	}
}

// Exact checks that the model at path gives bit-identical log-probabilities
// for reqs alone and packed three ways (in order, reversed and rotated,
// with other batch sizes, numbers of packed sequences and cache sizes,
// with prompts shared and not), and with each cache of its own. Invariance
// allows 1e-4 nats; a quantized model must meet Exact: its activations are
// rounded to 8 bits before every product, so a last-bit difference
// upstream moves a whole quantization step (issue 40).
func Exact(t *testing.T, path string, reqs []runner.Request) {
	t.Helper()
	base := Load(t, path, llama.Options{Threads: 1, Batch: llama.DefaultBatch, Parallel: llama.DefaultParallel})
	ref := Score(t, base, reqs)
	same := func(what string, got []runner.Result, want []runner.Result) {
		t.Helper()
		if d := MaxDiff(t, want, got); d != 0 {
			t.Fatalf("%s: log-probabilities differ from packed in order by up to %g nats", what, d)
		}
	}
	for i := range reqs {
		same(fmt.Sprintf("request %d alone", i), Score(t, base, reqs[i:i+1]), ref[i:i+1])
	}
	same("prompts not shared", runner.Reshare(reqs, Score(t, base, runner.Unshare(reqs))), ref)
	n := len(reqs)
	reversed, rotated := make([]int, n), make([]int, n)
	for i := range n {
		reversed[i], rotated[i] = n-1-i, (i+n/3)%n
	}
	for _, c := range []struct {
		order []int
		opts  llama.Options
	}{
		{reversed, llama.Options{Threads: 1, Batch: 64, Parallel: 4, Context: 1024}},
		{rotated, llama.Options{Threads: 1, Batch: 7, Parallel: 8, Context: 512}},
		{rotated, llama.Options{Threads: 1, Batch: 2048, Parallel: 64, Context: 8192}},
		{reversed, llama.Options{Threads: 1, Batch: 256, Parallel: 8, Context: 512, SeparateCaches: true}},
	} {
		m := Load(t, path, c.opts)
		in := make([]runner.Request, n)
		for i, j := range c.order {
			in[i] = reqs[j]
		}
		got := Score(t, m, in)
		back := make([]runner.Result, n)
		for i, j := range c.order {
			back[j] = got[i]
		}
		same(fmt.Sprintf("%+v", c.opts), back, ref)
		m.Close()
	}
}
