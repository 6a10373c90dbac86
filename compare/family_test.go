package compare_test

import (
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/runfile"
)

func TestHolm(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		ps   []float64
		want []bool
	}{
		// 0.01 <= 0.05/4, then 0.015 <= 0.05/3, then 0.03 > 0.05/2 stops.
		{[]float64{0.03, 0.01, 0.015, 0.04}, []bool{false, true, true, false}},
		// The smallest above alpha/m: nothing is rejected, not even 0.03.
		{[]float64{0.03, 0.5}, []bool{false, false}},
		{[]float64{0.001, 0.02}, []bool{true, true}},
		{nil, []bool{}},
	} {
		got := compare.Holm(tt.ps, 0.05)
		for i := range tt.want {
			if got[i] != tt.want[i] {
				t.Errorf("Holm(%v) = %v, want %v", tt.ps, got, tt.want)
				break
			}
		}
	}
}

// untilDecided is head scored as `until: decided` does against base:
// records in the seeded order until the confidence sequence decides (or
// the set ends), the header saying where it stopped.
func untilDecided(t *testing.T, base, head *runfile.Run, minEffect float64) *runfile.Run {
	h, tr, err := compare.StartSequential(base, base.Header.Test, sequential.DefaultSeed, compare.DefaultConfidence, minEffect, "")
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]any{}
	for _, d := range head.Docs {
		recs[d.ID] = d
	}
	for _, it := range head.Items {
		recs[it.ID] = it
	}
	out := &runfile.Run{Header: head.Header}
	for _, id := range tr.Order(base.IDs(), h.Seed) {
		if err := tr.Add(recs[id]); err != nil {
			t.Fatal(err)
		}
		switch r := recs[id].(type) {
		case runfile.Doc:
			out.Docs = append(out.Docs, r)
		case runfile.Item:
			out.Items = append(out.Items, r)
		}
		if d := tr.Decision(); d != "" {
			stop := tr.Stop(d)
			h.Stop = &stop
			break
		}
	}
	out.Header.Sequential = &h
	return out
}

// gateTrial is one pull request at zero change: the head, main's
// checkpoint and the anchor differ only by noise, on data noisy enough
// that the minimum effects and drift budgets do not bind (the hard case
// for the gate's error). It returns the comparisons the gate reads.
func gateTrial(t *testing.T, i uint64, decided bool) []*compare.Comparison {
	docs := comparetest.SynthDocs(60, 1000+i, 0.95, 0.25)
	items := comparetest.RelatedItems(150, 3, 2000+i, 0.5, 1)
	runs := map[string][3]*runfile.Run{}
	var fresh, probes [3]*runfile.Run
	for j, name := range []string{"base", "head", "anchor"} {
		fresh[j] = comparetest.FreshRun("fresh-"+name, "m", comparetest.Jittered(docs, 10*i+uint64(j), 0.1))
		probes[j] = comparetest.ProbeRun("probes-"+name, "m", items[j])
	}
	runs["fresh"], runs["probes"] = fresh, probes
	opts := compare.NewOptions()
	opts.Resamples, opts.HeadlineOnly, opts.Workers = 1000, true, 1
	drift := opts
	drift.MinEffect = compare.MinEffect{BPB: compare.DefaultMaxDriftBPB, Accuracy: compare.DefaultMaxDriftAccuracy}
	var out []*compare.Comparison
	for _, test := range []string{"fresh", "probes"} {
		r := runs[test]
		head := r[1]
		minEffect, budget := compare.DefaultMinEffect(test), compare.DefaultMaxDriftBPB
		if test == "probes" {
			budget = compare.DefaultMaxDriftAccuracy
		}
		if decided {
			head = untilDecided(t, r[0], head, minEffect)
		}
		for _, pair := range []struct {
			base *runfile.Run
			opts compare.Options
		}{{r[0], opts}, {r[2], drift}} {
			c, err := compare.Runs(pair.base, head, pair.opts)
			if err != nil {
				t.Fatal(err)
			}
			if c.Sequential != nil && pair.base == r[2] {
				// As the Action does: since the anchor, the anytime-valid
				// interval is held to the budget, not to main's minimum
				// effect the run stopped on.
				c.MinEffect, c.Verdict = budget, compare.Judge(c.Metric, c.Delta, c.CI, budget)
			}
			out = append(out, c)
		}
	}
	return out
}

func anyRegressed(cs []*compare.Comparison) bool {
	for _, c := range cs {
		if c.Verdict == compare.Regressed {
			return true
		}
	}
	return false
}

// TestGateFamilyWiseError measures by simulation how often the gate
// fails a pull request that changed nothing, over its four comparisons
// (Fresh Text and the Probe Suite, each against main's checkpoint and
// against the anchor): each test alone at 95% fails it well over 5% of
// the time; judged as a family by Holm's procedure, at most 5%.
func TestGateFamilyWiseError(t *testing.T) {
	t.Parallel()
	const trials = 800
	var naive, holm, split int
	for i := range uint64(trials) {
		cs := gateTrial(t, i, false)
		if anyRegressed(cs) {
			naive++
		}
		// The split of alpha: each comparison alone at 0.05/4.
		for _, c := range cs {
			if c.Verdict == compare.Regressed && c.PValue <= compare.FamilyAlpha/float64(len(cs)) {
				split++
				break
			}
		}
		compare.Family(cs, compare.FamilyAlpha)
		if anyRegressed(cs) {
			holm++
		}
	}
	rate := func(n int) float64 { return float64(n) / trials }
	t.Logf("family-wise error at zero change over %d pull requests: per test at 95%% %.1f%%, Holm %.1f%%, split of alpha %.1f%%",
		trials, 100*rate(naive), 100*rate(holm), 100*rate(split))
	if rate(naive) <= compare.FamilyAlpha {
		t.Errorf("per-test 95%% fails %.1f%% of null pull requests; the simulation is not hard enough to tell", 100*rate(naive))
	}
	if rate(holm) > compare.FamilyAlpha {
		t.Errorf("the gate judged by Holm fails %.1f%% of pull requests that changed nothing, over %.0f%%", 100*rate(holm), 100*compare.FamilyAlpha)
	}
	if holm < split {
		t.Errorf("Holm failed %d pull requests, the split of alpha %d: Holm's first step is the split's test, so it never fails fewer", holm, split)
	}
}

// Holm is the right choice over a split of alpha: the same guarantee, and
// a gate whose head improved one test clearly and regressed another
// moderately fails under Holm where the split lets it through.
func TestFamilyHolmBeatsSplit(t *testing.T) {
	t.Parallel()
	better := &compare.Comparison{Result: compare.Result{Verdict: compare.Improved, PValue: 0.0005}}
	worse := &compare.Comparison{Result: compare.Result{Verdict: compare.Regressed, PValue: 0.015}}
	quiet := &compare.Comparison{Result: compare.Result{Verdict: compare.NoChange, PValue: 0.6}}
	noise := &compare.Comparison{Result: compare.Result{Verdict: compare.NoChange, PValue: 0.9}}
	cs := []*compare.Comparison{better, worse, quiet, noise}
	if worse.PValue <= compare.FamilyAlpha/4 {
		t.Fatal("the example must be one the split does not reject")
	}
	if out := compare.Family(cs, compare.FamilyAlpha); len(out) != 0 || worse.Verdict != compare.Regressed {
		t.Errorf("Holm withdrew %d regressions, verdict %s; want the regression kept (0.015 <= 0.05/3 after the improvement)", len(out), worse.Verdict)
	}
	// Alone among noise, the same regression is withdrawn, and says why.
	worse2 := &compare.Comparison{Result: compare.Result{Verdict: compare.Regressed, PValue: 0.015}}
	cs = []*compare.Comparison{worse2, {Result: compare.Result{Verdict: compare.NoChange, PValue: 0.5}}, quiet, noise}
	if out := compare.Family(cs, compare.FamilyAlpha); len(out) != 1 || worse2.Verdict != compare.NoChange || len(worse2.Notes) != 1 {
		t.Errorf("withdrawn %d, verdict %s, notes %q", len(out), worse2.Verdict, worse2.Notes)
	}
}

// TestGateFamilyWiseErrorUntilDecided is the same at the Action's
// default for pull requests, until: decided: each head run stops once its
// anytime-valid comparison with main decides, and the gate judges the
// four comparisons of what it scored. Alone, each judges the whole set's
// own change, which on a set this small is seldom zero when the models'
// true change is: the family's Holm, on each comparison's bootstrap
// p-value over the records scored, is what keeps the gate within 5%.
func TestGateFamilyWiseErrorUntilDecided(t *testing.T) {
	t.Parallel()
	const trials = 800
	var naive, holm, early, fixed int
	for i := range uint64(trials) {
		cs := gateTrial(t, i, true)
		for _, c := range cs {
			switch {
			case c.Sequential == nil: // the rule's assumption broke: the fixed-sample bootstrap judges
				fixed++
			case c.Sequential.Scored < c.Sequential.Total:
				early++
			}
		}
		if anyRegressed(cs) {
			naive++
		}
		compare.Family(cs, compare.FamilyAlpha)
		if anyRegressed(cs) {
			holm++
		}
	}
	rate := func(n int) float64 { return float64(n) / trials }
	t.Logf("until decided: family-wise error at zero change over %d pull requests: per test %.1f%%, Holm %.1f%% (of the comparisons, %.0f%% stopped early, %.0f%% judged by the fixed-sample bootstrap)",
		trials, 100*rate(naive), 100*rate(holm), 100*float64(early)/float64(4*trials), 100*float64(fixed)/float64(4*trials))
	if rate(naive) <= compare.FamilyAlpha {
		t.Errorf("until decided, per test the gate fails %.1f%% of null pull requests; the simulation is not hard enough to tell", 100*rate(naive))
	}
	if rate(holm) > compare.FamilyAlpha {
		t.Errorf("until decided, the gate judged by Holm fails %.1f%% of pull requests that changed nothing, over %.0f%%", 100*rate(holm), 100*compare.FamilyAlpha)
	}
}
