package store

import (
	"math"

	"github.com/udgamlabs/udgam-ci/compare"
)

// Score is a run's headline number with its 95% bootstrap interval, as
// compare.ScoreRun computes it for every surface: it depends only on the
// records, so a page and a fresh local run show the same one.
type Score = compare.RunScore

func isFinite(s Score) bool {
	for _, v := range []float64{s.Value, s.Lo, s.Hi} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
