//go:build cgo

package llama

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The log-sum-exp taken a vocabulary panel at a time and combined in
// panel order is the whole row's (its exponentials are float32's, of
// differences from another maximum: 1e-7 of it), the same bits where the
// row is one panel, on rows made to
// break shortcuts: logits past float32's exp range (a sum without the
// maximum taken out overflows), a maximum alone in the last panel, panels
// that underflow to nothing beside it, equal logits, a short last panel;
// and a logit that is not finite in any panel makes it NaN.
func TestPanelLogSumExp(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(53, 2))
	normal := func(n int, mean, sd float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(mean + sd*rng.NormFloat64())
		}
		return x
	}
	lastMax := normal(3*headPanel+17, 0, 1)
	lastMax[len(lastMax)-1] = 1e4
	equal := make([]float32, 2*headPanel+1)
	for i := range equal {
		equal[i] = 7
	}
	for _, tc := range []struct {
		name string
		row  []float32
	}{
		{"normal", normal(5*headPanel+100, 0, 3)},
		{"large logits", normal(4*headPanel, 200, 30)},
		{"very negative", normal(3*headPanel+1, -5e3, 10)},
		{"maximum last", lastMax},
		{"equal", equal},
		{"one panel", normal(headPanel-3, 0, 5)},
	} {
		got, want := panelLogSumExp(tc.row), wholeLogSumExp(tc.row)
		tol := 1e-7 * max(1, math.Abs(want))
		if len(tc.row) <= headPanel {
			tol = 0
		}
		if math.IsNaN(got) || math.IsInf(got, 0) || math.Abs(got-want) > tol {
			t.Errorf("%s: panels give %.17g, the whole row %.17g", tc.name, got, want)
		}
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		for _, at := range []int{0, headPanel + 5, 3*headPanel - 1} {
			row := normal(3*headPanel, 0, 1)
			row[at] = bad
			if got := panelLogSumExp(row); !math.IsNaN(got) {
				t.Errorf("%g at %d: log-sum-exp %g, want NaN", bad, at, got)
			}
		}
	}
}
