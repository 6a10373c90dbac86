package testmodel

import (
	"context"
	"fmt"
	"math"

	"github.com/udgamlabs/udgam-ci/runner"
)

// branchScorer returns log p(seq[p] | seq[:p]) for each p in positions. It is
// called only with validated input: ids inside the vocabulary, positions in
// [1, len(seq)).
type branchScorer func(seq []int32, positions []int) []float64

// scoreRequests implements runner.Scorer's contract for the reference models:
// each branch is scored as the sequence Prefix+Tokens. Input is checked by
// the engine's own validation, so the references reject what it rejects,
// with the same messages; a reference model also has a context length that
// each branch's sequence must fit.
func scoreRequests(ctx context.Context, reqs []runner.Request, vocab, contextLen int, score branchScorer) ([]runner.Result, error) {
	unbounded := runner.Limits{BatchTokens: math.MaxInt, MaxSeqs: math.MaxInt, Cells: math.MaxInt}
	if err := runner.Validate(reqs, unbounded, vocab); err != nil {
		return nil, err
	}
	results := make([]runner.Result, len(reqs))
	for r, req := range reqs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res := make(runner.Result, len(req.Branches))
		for b, br := range req.Branches {
			seq := make([]int32, 0, len(req.Prefix)+len(br.Tokens))
			seq = append(append(seq, req.Prefix...), br.Tokens...)
			if len(seq) > contextLen {
				return nil, fmt.Errorf("request %d branch %d: %d tokens exceed the context length %d", r, b, len(seq), contextLen)
			}
			res[b] = score(seq, br.Positions)
		}
		results[r] = res
	}
	return results, nil
}

// softmax replaces finite x by its softmax, one exponential per element.
func softmax(x []float64) {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	var s float64
	for i, v := range x {
		x[i] = math.Exp(v - m)
		s += x[i]
	}
	for i := range x {
		x[i] /= s
	}
}

// LogSumExp is log(sum(exp(x))) computed without overflow: the
// log-normaliser of a softmax over x.
func LogSumExp(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	if math.IsInf(m, 0) {
		return m
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}
