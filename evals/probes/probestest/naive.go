// Package probestest holds what tests and benchmarks of the Probe Suite
// need and production does not: naive scoring, every choice as its own
// full sequence, the yardstick shared-prefix scoring is checked against,
// and the count of tokens each way evaluates.
package probestest

import (
	"context"
	"fmt"

	"github.com/udgamlabs/udgam-ci/runner"
)

// Naive splits a shared-prefix request into one plain request per branch
// (no prefix; the whole sequence in one branch, scoring the same
// positions), for benchmarks and for checking that sharing the prefix
// changes no log-probability. Result b of the output answers branch b.
func Naive(r runner.Request) []runner.Request {
	out := make([]runner.Request, len(r.Branches))
	for b, br := range r.Branches {
		seq := make([]int32, 0, len(r.Prefix)+len(br.Tokens))
		seq = append(append(seq, r.Prefix...), br.Tokens...)
		out[b] = runner.Request{Branches: []runner.Branch{{Tokens: seq, Positions: br.Positions}}}
	}
	return out
}

// NaiveModel wraps a model so that every request is scored the naive way,
// each choice as its own sequence, with the same results shape.
type NaiveModel struct{ runner.Model }

// Score implements runner.Scorer by splitting every request with Naive.
func (m NaiveModel) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	var flat []runner.Request
	for _, r := range reqs {
		flat = append(flat, Naive(r)...)
	}
	res, err := m.Model.Score(ctx, flat)
	if err != nil {
		return nil, err
	}
	if len(res) != len(flat) {
		return nil, fmt.Errorf("naive scoring: %d results for %d requests", len(res), len(flat))
	}
	out := make([]runner.Result, len(reqs))
	k := 0
	for i, r := range reqs {
		out[i] = make(runner.Result, len(r.Branches))
		for b := range r.Branches {
			out[i][b] = res[k][0]
			k++
		}
	}
	return out, nil
}
