package store

import "math"

// Score is a run's headline number with its 95% bootstrap interval, as
// the server judged it from the records (compare.ScoreRun, the same for
// every surface); the store keeps it as given.
type Score struct {
	Metric string
	Value  float64
	Lo     float64
	Hi     float64
}

func isFinite(s Score) bool {
	for _, v := range []float64{s.Value, s.Lo, s.Hi} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
