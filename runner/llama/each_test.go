//go:build cgo

package llama_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// ScoreEach hands over every request once, with Score's results, as the
// decode that completes it returns: a call cancelled at its first request
// has handed over only some (issue 32: Fresh Text packs every document
// into one call and saved none when interrupted).
func TestScoreEachHandsOverAsItGoes(t *testing.T) {
	t.Parallel()
	_, lp := fixtures(t)
	reqs := llamatest.ProbeLike(rand.New(rand.NewPCG(9, 9)), 40, 256)
	for _, opts := range []llama.Options{{Threads: 1, Batch: 32}, {Threads: 1, Batch: 32, SeparateCaches: true}} {
		m := llamatest.Load(t, lp, opts)
		want, err := m.Score(context.Background(), reqs)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]runner.Result, len(reqs))
		err = m.ScoreEach(context.Background(), reqs, func(i int, r runner.Result) error {
			if got[i] != nil {
				t.Errorf("%+v: request %d handed over twice", opts, i)
			}
			got[i] = r
			return nil
		})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%+v: ScoreEach differs from Score (%v)", opts, err)
		}
		if opts.SeparateCaches {
			continue // unshared requests complete together at the end
		}
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		err = m.ScoreEach(ctx, reqs, func(int, runner.Result) error { n++; cancel(); return nil })
		cancel()
		if err != context.Canceled || n == 0 || n >= len(reqs) {
			t.Errorf("cancelled at the first request: %v after %d of %d handed over", err, n, len(reqs))
		}
	}
}
