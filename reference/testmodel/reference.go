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

// lastPosition is the largest of positions (0 for none): the hidden states
// of tokens 0..last-1 predict tokens 1..last, so a forward pass needs last
// tokens.
func lastPosition(positions []int) int {
	last := 0
	for _, p := range positions {
		last = max(last, p)
	}
	return last
}

// headLogProbs is the output head every decoder reference ends with: for
// each position p, the hidden state of token p-1 through the final norm and
// the output matrix out (the embedding when tied), then the log-probability
// of seq[p]. post, when not nil, adjusts the logits first (Gemma's final
// soft-capping).
func headLogProbs(x [][]float64, seq []int32, positions []int, vocab int, norm func(dst, x []float64), out []float32, post func(logits []float64)) []float64 {
	res := make([]float64, len(positions))
	if len(positions) == 0 {
		return res
	}
	h := make([]float64, len(x[0]))
	logits := make([]float64, vocab)
	for i, p := range positions {
		norm(h, x[p-1])
		matVec(logits, out, h)
		if post != nil {
			post(logits)
		}
		res[i] = LogSoftmaxAt(logits, seq[p])
	}
	return res
}

// headWeight is the output matrix of a Hugging Face decoder's weights:
// lm_head, or the token embedding when the two are tied.
func headWeight(w map[string][]float32, tied bool) []float32 {
	if tied {
		return w["model.embed_tokens.weight"]
	}
	return w["lm_head.weight"]
}

// LogSoftmaxAt returns logits[target] - log(sum(exp(logits))), the
// log-probability every reference reports.
func LogSoftmaxAt(logits []float64, target int32) float64 {
	return logits[target] - LogSumExp(logits)
}
