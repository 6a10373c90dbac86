package compare

import (
	"fmt"
	"sort"
)

// FamilyAlpha is the gate's family-wise error at zero change: the chance
// that a job fails when no test truly changed, over every comparison the
// gate reads together (each test against the baseline, each against the
// anchor).
const FamilyAlpha = 1 - DefaultConfidence

// Default drift budgets: the largest change since the anchor the gate
// lets through, five minimum effects for bits per byte and three for
// accuracy (a release may move more than one pull request).
const (
	DefaultMaxDriftBPB      = 0.01
	DefaultMaxDriftAccuracy = 3.0 // percentage points
)

// Holm reports which hypotheses, given their p-values, Holm's step-down
// procedure rejects at family-wise level alpha: the smallest p-value
// against alpha/m, the next against alpha/(m-1), and so on, stopping at
// the first that is not below its bound. It controls the family-wise
// error under any dependence between the tests.
func Holm(ps []float64, alpha float64) []bool {
	idx := make([]int, len(ps))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ps[idx[a]] < ps[idx[b]] })
	out := make([]bool, len(ps))
	for k, i := range idx {
		if ps[i] > alpha/float64(len(ps)-k) {
			break
		}
		out[i] = true
	}
	return out
}

// Family judges together the comparisons one gate reads, so that the
// gate fails at zero change at most FamilyAlpha of the time: a
// regression stands only when Holm's procedure over all their p-values
// rejects it, and is otherwise withdrawn (NoChange) with a note saying
// why. Improvements are left as they are: they never fail a gate. It
// returns the comparisons it withdrew.
func Family(cs []*Comparison, alpha float64) []*Comparison {
	if len(cs) < 2 {
		return nil
	}
	ps := make([]float64, len(cs))
	for i, c := range cs {
		ps[i] = c.PValue
	}
	keep := Holm(ps, alpha)
	var out []*Comparison
	for i, c := range cs {
		if c.Verdict != Regressed || keep[i] {
			continue
		}
		c.Verdict, c.Significant = NoChange, false
		c.Notes = append(c.Notes, fmt.Sprintf("Regressed on its own (p = %.3g), but not across the gate's %d comparisons: Holm's procedure keeps the job's chance of failing with no real change at %.0f%%.",
			c.PValue, len(cs), 100*alpha))
		out = append(out, c)
	}
	return out
}
