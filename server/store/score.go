package store

import (
	"math"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Metric names: report's.
const (
	MetricBPB      = compare.MetricBPB
	MetricAccuracy = compare.MetricAccuracy
)

// Score is a run's headline number with its 95% bootstrap interval, as
// report computes it for every surface.
type Score = compare.RunScore

// ScoreRun is compare.ScoreRun: the stored interval depends only on the
// records, so a page and a fresh local run show the same one.
func ScoreRun(r *runfile.Run) Score { return compare.ScoreRun(r) }

func isFinite(s Score) bool {
	for _, v := range []float64{s.Value, s.Lo, s.Hi} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
