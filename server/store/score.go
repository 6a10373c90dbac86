package store

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// Metric names.
const (
	MetricBPB      = "bpb"
	MetricAccuracy = "accuracy"
)

// intervalResamples is the bootstrap size for one run's own interval: the
// interval is drawn on the history chart, where 1,000 resamples are ample
// and keep an upload of 2,000 records fast.
const intervalResamples = 1000

// Score is a run's headline number with its 95% bootstrap interval.
type Score struct {
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
}

func (s Score) finite() bool {
	for _, v := range []float64{s.Value, s.Lo, s.Hi} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// ScoreRun recomputes the score from the records and bootstraps its 95%
// interval over them: bpb as a ratio of sums in every resample, seeded by
// the run id so the same run always gets the same interval; accuracy
// exactly (see binomialInterval).
func ScoreRun(r *runfile.Run) Score {
	if r.Len() == 0 {
		return Score{Metric: metricOf(r.Header.Test)}
	}
	h := fnv.New64a()
	h.Write([]byte(r.Header.ID))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x75646761))
	vals := make([]float64, intervalResamples)
	if r.Header.Test == runfile.TestFresh {
		s := runfile.SummarizeFresh(r.Docs)
		n := len(r.Docs)
		for b := range vals {
			var bits float64
			var bytes int
			for range n {
				d := &r.Docs[index(rng, n)]
				bits += d.Bits
				bytes += d.Bytes
			}
			if bytes > 0 {
				vals[b] = bits / float64(bytes)
			}
		}
		return interval(MetricBPB, s.BPB, vals)
	}
	s := runfile.SummarizeProbes(r.Items)
	lo, hi := binomialInterval(s.Correct, s.Items)
	return Score{Metric: MetricAccuracy, Value: s.Accuracy, Lo: lo, Hi: hi}
}

// binomialInterval is the bootstrap percentile interval of an accuracy,
// computed exactly: resampling n items of which k are correct gives a
// Binomial(n, k/n) count of correct ones, so its 2.5% and 97.5% quantiles
// are read from that distribution instead of drawn, in O(n).
func binomialInterval(k, n int) (float64, float64) {
	if k == 0 || k == n {
		v := 100 * float64(k) / float64(n)
		return v, v
	}
	p := float64(k) / float64(n)
	lgN, _ := math.Lgamma(float64(n + 1))
	logP, logQ := math.Log(p), math.Log1p(-p)
	lo, hi := -1, -1
	cdf := 0.0
	for j := 0; j <= n; j++ {
		lgJ, _ := math.Lgamma(float64(j + 1))
		lgNJ, _ := math.Lgamma(float64(n - j + 1))
		cdf += math.Exp(lgN - lgJ - lgNJ + float64(j)*logP + float64(n-j)*logQ)
		if lo < 0 && cdf >= 0.025 {
			lo = j
		}
		if cdf >= 0.975 {
			hi = j
			break
		}
	}
	if hi < 0 { // rounding left the sum a hair under 0.975
		hi = n
	}
	return 100 * float64(lo) / float64(n), 100 * float64(hi) / float64(n)
}

// interval takes the 2.5th and 97.5th percentiles of the resampled values.
func interval(metric string, value float64, vals []float64) Score {
	slices.Sort(vals)
	lo := vals[int(0.025*float64(len(vals)))]
	hi := vals[int(0.975*float64(len(vals)))-1]
	return Score{Metric: metric, Value: value, Lo: lo, Hi: hi}
}

func metricOf(test string) string {
	if test == runfile.TestFresh {
		return MetricBPB
	}
	return MetricAccuracy
}

// index draws a uniform index below n by multiply-shift: its bias, at most
// n/2^32, is far below what a 95% interval can show, and it is several
// times faster than rejection sampling on the hot path of every upload.
func index(rng *rand.Rand, n int) int {
	return int((uint64(rng.Uint32()) * uint64(n)) >> 32)
}
