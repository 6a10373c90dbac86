package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/runfile"
)

func marginItem(i int, m float64) runfile.Item {
	types := []string{"add", "mul", "compare"}
	typ := types[i%len(types)]
	return comparetest.MarginItem(fmt.Sprintf("pea-%s-1-%d", typ, i), typ, 1, m)
}

// recomputed is the mean margin of items, from their per-byte scores, in
// float64 without the package's helpers.
func recomputed(items []runfile.Item) float64 {
	var sum float64
	for _, it := range items {
		best := math.Inf(-1)
		for j, v := range it.Norm {
			if j != it.Answer && v > best {
				best = v
			}
		}
		sum += it.Norm[it.Answer] - best
	}
	return sum / float64(len(items))
}

func TestMarginMeanByGroup(t *testing.T) {
	t.Parallel()
	g := rand.New(rand.NewPCG(5, 6))
	var base, head []runfile.Item
	for i := range 300 {
		base = append(base, marginItem(i, g.NormFloat64()))
		head = append(head, marginItem(i, 0.2+g.NormFloat64()))
	}
	c, err := Runs(comparetest.ProbeRun("a", "m", base), comparetest.ProbeRun("b", "m", head), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := c.Margin
	if m == nil {
		t.Fatal("no margin for records with per-byte scores")
	}
	if b, h := recomputed(base), recomputed(head); !near(m.Base, b, 1e-12) || !near(m.Head, h, 1e-12) || !near(m.Delta, h-b, 1e-12) {
		t.Errorf("margin base %v head %v delta %v, recomputed %v %v %v", m.Base, m.Head, m.Delta, b, h, h-b)
	}
	if !(m.CI[0] < m.Delta && m.Delta < m.CI[1]) || m.Metric != MetricMargin {
		t.Errorf("margin interval %v does not hold delta %v (metric %q)", m.CI, m.Delta, m.Metric)
	}
	for typ, r := range c.ByGroup {
		var bs, hs []runfile.Item
		for i := range base {
			if base[i].Type == typ {
				bs, hs = append(bs, base[i]), append(hs, head[i])
			}
		}
		if r.Margin == nil || !near(r.Margin.Base, recomputed(bs), 1e-12) || !near(r.Margin.Head, recomputed(hs), 1e-12) {
			t.Errorf("type %s: margin %+v, recomputed base %v head %v", typ, r.Margin, recomputed(bs), recomputed(hs))
		}
	}

	// A record without per-byte scores leaves the margin out rather than
	// averaging over part of the items.
	old := append([]runfile.Item(nil), base...)
	old[0].Norm = nil
	c, err = Runs(comparetest.ProbeRun("a", "m", old), comparetest.ProbeRun("b", "m", head), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Margin != nil {
		t.Errorf("margin %+v from a record without per-byte scores", c.Margin)
	}
}

// The margin's interval is the paired bootstrap: over many samples of
// correlated items it covers the true change about 95% of the time. An
// unpaired interval (each run resampled on its own) is far wider here and
// would cover nearly always, failing the upper bound.
func TestMarginCoverage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulation")
	}
	const trials, n, truth = 300, 150, 0.1
	covered := 0
	for trial := range uint64(trials) {
		g := rand.New(rand.NewPCG(trial, 77))
		var base, head []runfile.Item
		for i := range n {
			z := g.NormFloat64() // the item's difficulty, shared by both runs
			base = append(base, marginItem(i, z+0.3*g.NormFloat64()))
			head = append(head, marginItem(i, z+truth+0.3*g.NormFloat64()))
		}
		c, err := Runs(comparetest.ProbeRun("a", "m", base), comparetest.ProbeRun("b", "m", head), Options{Seed: trial, Resamples: 1000, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if c.Margin.CI[0] <= truth && truth <= c.Margin.CI[1] {
			covered++
		}
	}
	rate := float64(covered) / trials
	t.Logf("margin coverage %.3f over %d trials", rate, trials)
	if rate < 0.92 || rate > 0.98 {
		t.Errorf("95%% margin interval covered the true change in %.1f%% of %d trials, want 92-98%%", 100*rate, trials)
	}
}

func TestMarginDisagreesWithAccuracy(t *testing.T) {
	t.Parallel()
	// Accuracy rises 50 points; the mean margin falls from about 1 to 0.05.
	base, head := comparetest.Disagreeing(400)
	var better []runfile.Item
	for i := range base {
		better = append(better, comparetest.MarginItem(base[i].ID, base[i].Type, 1, 2.5))
	}
	c, err := Runs(comparetest.ProbeRun("a", "m", base), comparetest.ProbeRun("b", "m", head), Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.Delta <= 0 || c.Margin.Delta >= 0 || !c.Margin.Disagrees || !c.Margin.Significant {
		t.Errorf("accuracy delta %v, margin %+v: want accuracy up, margin down significantly, flagged", c.Delta, c.Margin)
	}
	c, err = Runs(comparetest.ProbeRun("a", "m", base), comparetest.ProbeRun("b", "m", better), Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.Delta <= 0 || c.Margin.Delta <= 0 || c.Margin.Disagrees {
		t.Errorf("accuracy delta %v, margin %+v: both up, want no flag", c.Delta, c.Margin)
	}
}

// When neither run changes, the disagreement flag is a false alarm: it
// fires rarely, because it needs one of the two moves to be significant.
// Flagging every pair of opposite signs instead would fire on about a
// third of these comparisons.
func TestMarginDisagreementFalseAlarms(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulation")
	}
	const trials, n = 300, 150
	flagged, opposite := 0, 0
	for trial := range uint64(trials) {
		g := rand.New(rand.NewPCG(trial, 91))
		var base, head []runfile.Item
		for i := range n {
			z := 0.3 + g.NormFloat64()
			base = append(base, marginItem(i, z+0.3*g.NormFloat64()))
			head = append(head, marginItem(i, z+0.3*g.NormFloat64()))
		}
		c, err := Runs(comparetest.ProbeRun("a", "m", base), comparetest.ProbeRun("b", "m", head), Options{Seed: trial, Resamples: 1000, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if c.Margin.Disagrees {
			flagged++
		}
		if c.Delta*c.Margin.Delta < 0 {
			opposite++
		}
	}
	t.Logf("flagged %d, opposite signs %d of %d", flagged, opposite, trials)
	if rate := float64(flagged) / trials; rate > 0.08 {
		t.Errorf("the disagreement flag fired on %.1f%% of %d comparisons without any change, want at most 8%%", 100*rate, trials)
	}
}

// A run's own margin is the float64 mean of its items' margins, with an
// interval that holds it, narrows with more items, and depends on the
// records only; a run with an item lacking per-byte scores has none.
func TestRunMargin(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	items := func(n int) []runfile.Item {
		var out []runfile.Item
		for i := range n {
			out = append(out, marginItem(i, 0.2+rng.NormFloat64()*0.5))
		}
		return out
	}
	small := comparetest.ProbeRun("small", "m", items(60))
	big := comparetest.ProbeRun("big", "m", items(2000))
	for _, tc := range []struct {
		name string
		run  *runfile.Run
	}{{"60 items", small}, {"2,000 items", big}} {
		got, ok := RunMargin(tc.run)
		want := recomputed(tc.run.Items)
		if !ok || got.Metric != MetricMargin || math.Abs(got.Value-want) > 1e-12 || got.Lo >= want || got.Hi <= want {
			t.Errorf("%s: %+v (%v), want the mean %v inside its interval", tc.name, got, ok, want)
		}
		again := *tc.run
		again.Header.ID = "renamed"
		if g2, _ := RunMargin(&again); g2 != got {
			t.Errorf("%s: the interval depends on the run's id: %+v vs %+v", tc.name, g2, got)
		}
	}
	s, _ := RunMargin(small)
	b, _ := RunMargin(big)
	if b.Hi-b.Lo >= s.Hi-s.Lo {
		t.Errorf("2,000 items give [%v, %v], no narrower than 60 items' [%v, %v]", b.Lo, b.Hi, s.Lo, s.Hi)
	}
	plain := comparetest.ProbeRun("plain", "m", comparetest.SynthItems(50, 1, 0.5))
	if _, ok := RunMargin(plain); ok {
		t.Error("a run without per-byte scores has a margin")
	}
}
