package compare

import (
	"math"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// variantRun is a probes run of items with two variants: one flipping
// every k1-th item, the other every k2-th.
func variantRun(id string, items []runfile.Item, k1, k2 int) *runfile.Run {
	r := comparetest.ProbeRun(id, "m", items)
	r.Variants = append(comparetest.Variant(items, "reworded", k1), comparetest.Variant(items, "terse", k2)...)
	return r
}

func accuracy(items []runfile.Item) float64 { return runfile.SummarizeProbes(items).Accuracy }

func TestSpreadByHand(t *testing.T) {
	t.Parallel()
	items := comparetest.SynthItems(400, 9, 0.5)
	r := variantRun("a", items, 4, 0)
	s, err := RunSpread(r, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if s == nil || len(s.Variants) != 3 || s.Items != 400 || s.Variants[0].Variant != runfile.VariantPublished {
		t.Fatalf("spread %+v", s)
	}
	accs := []float64{accuracy(items), accuracy(comparetest.Variant(items, "x", 4)), accuracy(items)}
	lo, hi := math.Min(accs[0], accs[1]), math.Max(accs[0], accs[1])
	mean := (accs[0] + accs[1] + accs[2]) / 3
	var ss float64
	for _, a := range accs {
		ss += (a - mean) * (a - mean)
	}
	if !near(s.Range, hi-lo, 1e-9) || !near(s.SD, math.Sqrt(ss/2), 1e-9) {
		t.Errorf("range %v sd %v, want %v %v", s.Range, s.SD, hi-lo, math.Sqrt(ss/2))
	}
	for i, v := range s.Variants {
		if !near(v.Accuracy, accs[i], 1e-9) || !near(v.Delta, accs[i]-accs[0], 1e-9) {
			t.Errorf("variant %s: accuracy %v delta %v, want %v %v", v.Variant, v.Accuracy, v.Delta, accs[i], accs[i]-accs[0])
		}
	}
	if rw := s.Variants[1]; !(rw.CI[0] < rw.Delta && rw.Delta < rw.CI[1]) {
		t.Errorf("reworded: interval %v does not hold its delta %v", rw.CI, rw.Delta)
	}
	if te := s.Variants[2]; te.CI != [2]float64{0, 0} {
		t.Errorf("terse equals the published on every item, yet its interval is %v", te.CI)
	}
	if s, err := RunSpread(comparetest.ProbeRun("b", "m", items), Options{}); s != nil || err != nil {
		t.Errorf("a run without variants has spread %+v, %v", s, err)
	}
}

// The warning fires when the spread of either run is wider than the gap
// between them, and not when the gap is wider.
func TestSpreadExceedsGap(t *testing.T) {
	t.Parallel()
	base := comparetest.SynthItems(600, 3, 0.5)
	slight := comparetest.ShiftItems(base, 50) // a few points better
	far := comparetest.ShiftItems(base, 2)     // about 25 points better
	for _, tc := range []struct {
		name       string
		base, head *runfile.Run
		want       bool
	}{
		{"small gap, wide head spread", comparetest.ProbeRun("a", "m", base), variantRun("b", slight, 5, 7), true},
		{"small gap, wide base spread", variantRun("a", base, 5, 7), comparetest.ProbeRun("b", "m", slight), true},
		{"wide gap", variantRun("a", base, 40, 0), variantRun("b", far, 40, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Runs(tc.base, tc.head, Options{Seed: 1, Resamples: 500})
			if err != nil {
				t.Fatal(err)
			}
			v := c.Variants
			if v == nil || !near(v.Gap, math.Abs(c.Delta), 1e-12) {
				t.Fatalf("variants %+v for delta %v", v, c.Delta)
			}
			ranges := 0.0
			for _, s := range []*runfile.Spread{v.Base, v.Head} {
				if s != nil {
					ranges = math.Max(ranges, s.Range)
				}
			}
			if v.SpreadExceedsGap != tc.want || (ranges > v.Gap) != tc.want {
				t.Errorf("spread %v, gap %v: exceeds %v, want %v", ranges, v.Gap, v.SpreadExceedsGap, tc.want)
			}
		})
	}
}

// A variant's paired interval against the published template covers the
// true difference about 95% of the time over correlated items.
func TestVariantIntervalCoverage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulation")
	}
	const trials = 300
	covered := 0
	for trial := range uint64(trials) {
		pub, alt := comparetest.PairedItems(300, 500+trial, 0.5, 0.56)
		r := comparetest.ProbeRun("a", "m", pub)
		for _, it := range alt {
			it.ID, it.Variant = runfile.VariantID(it.ID, "reworded"), "reworded"
			r.Variants = append(r.Variants, it)
		}
		s, err := RunSpread(r, Options{Seed: trial, Resamples: 1000, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if ci := s.Variants[1].CI; ci[0] <= 6 && 6 <= ci[1] {
			covered++
		}
	}
	rate := float64(covered) / trials
	t.Logf("variant interval coverage %.3f over %d trials", rate, trials)
	if rate < 0.92 || rate > 0.98 {
		t.Errorf("95%% variant interval covered the true 6 points in %.1f%% of %d trials, want 92-98%%", 100*rate, trials)
	}
}
