package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/udgamlabs/udgam-ci/runner"
)

// KL summarises, over every Fresh Text token scored, how the artifact's
// next-token distribution departs from the reference's.
type KL struct {
	Tokens int `json:"tokens"`
	// Mean and P99 of KL(reference || artifact) per token, in nats.
	Mean float64 `json:"mean"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	// SameTop is the share of tokens (0..1) at which both models' most
	// likely next token is the same.
	SameTop float64 `json:"same_top"`
}

// klAcc gathers per-token divergences. Only one number per token is kept
// (for the percentile), never a distribution.
type klAcc struct {
	sum  float64
	same int
	kls  []float64
}

func (a *klAcc) add(kl, same float64) {
	a.sum += kl
	if same == 1 {
		a.same++
	}
	a.kls = append(a.kls, kl)
}

func (a *klAcc) summary() KL {
	n := len(a.kls)
	if n == 0 {
		return KL{}
	}
	s := slices.Clone(a.kls)
	slices.Sort(s)
	return KL{Tokens: n, Mean: a.sum / float64(n), P99: percentile(s, 0.99), Max: s[n-1],
		SameTop: float64(a.same) / float64(n)}
}

// percentile is the nearest-rank q-quantile of sorted values: the smallest
// value at or above which lie no more than 1-q of them.
func percentile(sorted []float64, q float64) float64 {
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(k, len(sorted)-1))]
}

// klModel is the artifact as fresh.Run sees it while the divergences are
// gathered: each Score call is scored on both models in lockstep, the
// artifact's log-probabilities are returned and every position's KL and
// top agreement recorded. Fresh Text scores each token exactly once, so
// each token is counted once.
type klModel struct {
	runner.Model // the artifact: its tokenizer and description
	pair         runner.PairScorer
	acc          *klAcc
}

// TokenBytes is the artifact's (fresh text without BOS needs it).
func (m *klModel) TokenBytes(id int32) ([]byte, error) {
	tb, ok := m.Model.(interface{ TokenBytes(int32) ([]byte, error) })
	if !ok {
		return nil, errors.New("this model cannot give the bytes of its tokens")
	}
	return tb.TokenBytes(id)
}

func (m *klModel) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	got, err := m.pair.ScorePair(ctx, reqs)
	if err != nil {
		return nil, err
	}
	if len(got) != len(reqs) {
		return nil, fmt.Errorf("pair scorer returned %d results for %d requests", len(got), len(reqs))
	}
	out := make([]runner.Result, len(got))
	for i, r := range got {
		for b := range r.KL {
			for k, kl := range r.KL[b] {
				if math.IsNaN(kl) || kl < -1e-9 {
					return nil, fmt.Errorf("request %d: KL divergence %g at read %d is not a divergence", i, kl, k)
				}
				m.acc.add(max(kl, 0), r.SameTop[b][k])
			}
		}
		out[i] = r.Art
	}
	return out, nil
}
