package compare

import "math"

// VerdictOf is the verdict of a change of metric, delta with interval ci:
// a change counts only when its interval excludes zero and it is at least
// minEffect. Comparisons judge their results by it, and the server's badge
// judges the change it stored after upload by it too.
func VerdictOf(metric string, delta float64, ci [2]float64, minEffect float64) Verdict {
	if !excludesZero(ci) || math.Abs(delta) < minEffect {
		return NoChange
	}
	return direction(metric, delta > 0)
}

// DefaultMinEffect is the minimum effect a comparison of metric counts
// when it asks for none of its own.
func DefaultMinEffect(metric string) float64 {
	if metric == MetricBPB {
		return DefaultMinEffectBPB
	}
	return DefaultMinEffectAccuracy
}
