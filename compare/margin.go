package compare

import (
	"math"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// MetricMargin names the byte-normalised margin (runfile.NormMargin), in
// nats per byte, higher is better.
const MetricMargin = "margin"

// Margin is the paired comparison of the mean byte-normalised margin of
// the same items: a continuous companion of accuracy, which only sees
// which side of zero each item's margin falls.
type Margin struct {
	Metric string     `json:"metric"` // MetricMargin
	Base   float64    `json:"base"`   // mean margin, nats per byte
	Head   float64    `json:"head"`
	Delta  float64    `json:"delta"` // head - base
	CI     [2]float64 `json:"ci"`    // paired bootstrap percentile interval of Delta
	PValue float64    `json:"p_value"`
	// Significant: the interval excludes zero (no minimum effect: the
	// unit is not accuracy's) and the group is not too small to judge.
	Significant bool `json:"significant"`
	// Disagrees: accuracy and margin move in opposite directions and at
	// least one of the two moves significantly (its interval excludes
	// zero), so the two scores rank the runs differently.
	Disagrees bool `json:"disagrees,omitempty"`
}

// withNorm adds the byte-normalised margins of a paired item.
func (r record) withNorm(b, h *runfile.Item) record {
	bm, bok := runfile.NormMargin(b)
	hm, hok := runfile.NormMargin(h)
	r.baseNorm, r.headNorm, r.hasNorm = bm, hm, bok && hok
	return r
}

// marginStream keeps the margin's resamples apart from accuracy's in the
// same group.
func marginStream(group string) uint64 { return streamOf("margin " + group) }

// margin compares the mean byte-normalised margin of recs by the same
// paired bootstrap as the score; nil when a record lacks per-byte scores.
// acc is the group's accuracy result, already judged.
func (j judge) margin(key string, recs []record, acc *Result) (*Margin, error) {
	xs := make([]record, len(recs))
	for i, r := range recs {
		if !r.hasNorm {
			return nil, nil
		}
		xs[i] = record{bn: r.baseNorm, bd: 1, hn: r.headNorm, hd: 1}
	}
	est := estimate(xs, 1)
	stats, err := bootstrap(j.ctx, xs, 1, j.opts.Resamples, j.opts.Seed, marginStream(key), j.opts.Workers)
	if err != nil {
		return nil, err
	}
	alpha := 1 - j.opts.Confidence
	m := &Margin{Metric: MetricMargin, Base: est.base, Head: est.head, Delta: est.head - est.base,
		CI: [2]float64{quantile(stats, alpha/2), quantile(stats, 1-alpha/2)}, PValue: pValue(stats)}
	m.Significant = !acc.TooFew && excludesZero(m.CI)
	accMoves := !acc.TooFew && excludesZero(acc.CI)
	opposite := acc.Delta != 0 && m.Delta != 0 && math.Signbit(acc.Delta) != math.Signbit(m.Delta)
	m.Disagrees = opposite && (accMoves || m.Significant)
	return m, nil
}

func excludesZero(ci [2]float64) bool { return ci[0] > 0 || ci[1] < 0 }
