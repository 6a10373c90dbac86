package runner

import "context"

// PairResult is what scoring one request on two models at once gives, per
// branch and in the order of its Positions, as Result does: each model's
// log-probabilities of the next token, and how the artifact's whole
// next-token distribution differs from the reference's.
type PairResult struct {
	Ref, Art Result
	// KL is KL(ref || art) = sum_v p_ref(v) (log p_ref(v) - log p_art(v))
	// in nats, over the whole vocabulary, accumulated in float64.
	KL Result
	// SameTop is 1 where both models' most likely next token is the same
	// (the lowest id wins a tie), else 0.
	SameTop Result
}

// PairScorer scores the same requests on a reference model and an
// artifact made from it, position by position, so that the full
// distributions are compared as they are computed and never stored.
type PairScorer interface {
	ScorePair(ctx context.Context, reqs []Request) ([]PairResult, error)
}
