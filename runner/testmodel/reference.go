package testmodel

import (
	"context"

	"github.com/udgamlabs/udgam-ci/runner"
)

// Reference is a runner.Scorer over a float64 forward pass written from an
// architecture's definition. Every architecture's exactness test compares
// llama.cpp with one (convert/archtest).
type Reference struct {
	Vocab, Context int
	// LogProbs returns log p(seq[p] | seq[:p]) for each p in positions; it
	// is called only with ids inside the vocabulary and positions in
	// [1, len(seq)), sequences no longer than Context.
	LogProbs func(seq []int32, positions []int) []float64
}

var _ runner.Scorer = (*Reference)(nil)

// Score scores each branch as the whole sequence Prefix+Tokens.
func (r *Reference) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	return scoreRequests(ctx, reqs, r.Vocab, r.Context, r.LogProbs)
}

// LogSoftmaxAt returns logits[target] - log(sum(exp(logits))), the
// log-probability every reference reports.
func LogSoftmaxAt(logits []float64, target int32) float64 {
	return logits[target] - logSumExp(logits)
}
