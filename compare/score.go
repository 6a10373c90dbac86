package compare

import (
	"context"
	"math"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// RunIntervalResamples is the bootstrap size of one run's own interval: it
// is drawn on the history chart, where 1,000 resamples are ample and keep
// an upload of 2,000 records fast.
const RunIntervalResamples = 1000

// ScoreLevel is the level of a run's own interval: every surface that
// shows one labels it with this.
const ScoreLevel = DefaultConfidence

// RunScore is one run's headline number with its bootstrap interval at
// ScoreLevel.
type RunScore struct {
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
}

// runIntervalStream names the random streams of a run's own interval, apart
// from the streams of any comparison group.
const runIntervalStream = "run interval"

// ScoreRun recomputes a run's score from its records and its percentile
// interval: bits per byte as a ratio of sums in every resample, drawn with
// DefaultSeed (so it depends only on the records, never on the run's id or
// on when it was scored); accuracy exactly (see binomialInterval).
func ScoreRun(r *runfile.Run) RunScore {
	if r.Header.Test == runfile.TestFresh {
		s := runfile.SummarizeFresh(r.Docs)
		out := RunScore{Metric: MetricBPB, Value: s.BPB, Lo: s.BPB, Hi: s.BPB}
		if len(r.Docs) == 0 {
			return out
		}
		recs := make([]record, len(r.Docs))
		for i, d := range r.Docs {
			recs[i] = record{hn: d.Bits, hd: float64(d.Bytes)} // base side empty: the draw is the head's ratio
		}
		vals, _ := bootstrap(context.Background(), recs, 1, RunIntervalResamples, DefaultSeed, streamOf(runIntervalStream), 1)
		alpha := 1 - ScoreLevel
		out.Lo, out.Hi = quantile(vals, alpha/2), quantile(vals, 1-alpha/2)
		return out
	}
	s := runfile.SummarizeProbes(r.Items)
	out := RunScore{Metric: MetricAccuracy, Value: s.Accuracy, Lo: s.Accuracy, Hi: s.Accuracy}
	if s.Items > 0 {
		out.Lo, out.Hi = binomialInterval(s.Correct, s.Items, ScoreLevel)
	}
	return out
}

// binomialInterval is the bootstrap percentile interval of an accuracy,
// computed exactly: resampling n items of which k are correct gives a
// Binomial(n, k/n) count of correct ones, so its quantiles are read from
// that distribution instead of drawn, in O(n).
func binomialInterval(k, n int, confidence float64) (float64, float64) {
	if k == 0 || k == n {
		v := runfile.Percent(k, n)
		return v, v
	}
	alpha := 1 - confidence
	p := float64(k) / float64(n)
	lgN, _ := math.Lgamma(float64(n + 1))
	logP, logQ := math.Log(p), math.Log1p(-p)
	lo, hi := -1, -1
	cdf := 0.0
	for j := 0; j <= n; j++ {
		lgJ, _ := math.Lgamma(float64(j + 1))
		lgNJ, _ := math.Lgamma(float64(n - j + 1))
		cdf += math.Exp(lgN - lgJ - lgNJ + float64(j)*logP + float64(n-j)*logQ)
		if lo < 0 && cdf >= alpha/2 {
			lo = j
		}
		if cdf >= 1-alpha/2 {
			hi = j
			break
		}
	}
	if hi < 0 { // rounding left the sum a hair under the upper level
		hi = n
	}
	return runfile.Percent(lo, n), runfile.Percent(hi, n)
}

// runMarginStream names the random stream of a run's own margin interval.
const runMarginStream = "run interval margin"

// RunMargin is a probes run's mean byte-normalised margin (its published
// items, runfile.NormMargin) with its own percentile interval, drawn as
// ScoreRun draws bits per byte's: RunIntervalResamples with DefaultSeed,
// so it depends only on the records. False when the run has no items or
// one lacks per-byte scores.
func RunMargin(r *runfile.Run) (RunScore, bool) {
	mean, ok := runfile.MeanNormMargin(r.Items)
	if !ok {
		return RunScore{}, false
	}
	recs := make([]record, len(r.Items))
	for i := range r.Items {
		m, _ := runfile.NormMargin(&r.Items[i])
		recs[i] = record{hn: m, hd: 1}
	}
	vals, _ := bootstrap(context.Background(), recs, 1, RunIntervalResamples, DefaultSeed, streamOf(runMarginStream), 1)
	alpha := 1 - ScoreLevel
	return RunScore{Metric: MetricMargin, Value: mean, Lo: quantile(vals, alpha/2), Hi: quantile(vals, 1-alpha/2)}, true
}
