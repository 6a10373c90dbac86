package probes

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// until is --until decided against base with a budget of records.
func until(t *testing.T, base *runfile.Run, minEffect float64, budget int) *evals.Until {
	t.Helper()
	h := runfile.Sequential{Rule: runfile.RuleUntilDecided, Seed: sequential.DefaultSeed, Level: 0.95, MinEffect: minEffect,
		Baseline: base.Header.ID, Total: base.Len()}
	tr, err := compare.NewTracker(base, runfile.TestProbes, h)
	if err != nil {
		t.Fatal(err)
	}
	return &evals.Until{Header: h, Tracker: tr, MaxRecords: budget}
}

// baseRun scores every item of set with m: a baseline for --until decided.
func baseRun(t *testing.T, dir string, set *Set, m runner.Model) *runfile.Run {
	t.Helper()
	res, err := Run(context.Background(), m, runOpts(filepath.Join(dir, "base.jsonl"), set))
	if err != nil {
		t.Fatal(err)
	}
	return res.Run
}

func itemIDs(items []runfile.Item) []string {
	ids := make([]string, len(items))
	for i := range items {
		ids[i] = items[i].ID
	}
	return ids
}

// A sequential run scores the items in the seeded order, stops at the
// budget with the stop in its header, resumes in the same order with a
// larger budget, and compare shows the interval the run stopped with.
func TestUntilBudgetResumeCompare(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set := testSet(t, 10)
	base := baseRun(t, dir, set, testmodel.RandomBigram(3))
	order := sequential.Order(itemIDs(base.Items), nil, sequential.DefaultSeed)
	head := testmodel.RandomBigram(4)
	out := filepath.Join(dir, "head.jsonl")
	o := runOpts(out, set)
	o.Selection.Until = until(t, base, 0, 60) // no minimum effect: only a clear change would decide
	res, err := Run(context.Background(), head, o)
	if err != nil {
		t.Fatal(err)
	}
	st := res.Run.Header.Sequential.Stop
	if st == nil || st.Reason != sequential.Budget || st.Scored != 60 || res.Run.Len() != 60 {
		t.Fatalf("stop %+v with %d records, want the budget after 60", st, res.Run.Len())
	}
	if got := itemIDs(res.Run.Items); !slices.Equal(got, order[:60]) {
		t.Errorf("records %v..., want the seeded order %v...", got[:5], order[:5])
	}
	onDisk, err := runfile.ReadFile(out)
	if err != nil || onDisk.Header.Sequential.Stop == nil || *onDisk.Header.Sequential.Stop != *st {
		t.Fatalf("the file's header does not record the stop: %v %+v", err, onDisk)
	}

	o = runOpts(out, set)
	o.Resume = true
	o.Selection.Until = until(t, base, 0, 100)
	res, err = Run(context.Background(), head, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 60 || res.Scored != 40 || !slices.Equal(itemIDs(res.Run.Items), order[:100]) {
		t.Errorf("resumed: skipped %d, scored %d; records not the first 100 of the order", res.Skipped, res.Scored)
	}
	st = res.Run.Header.Sequential.Stop
	c, err := compare.Runs(base, res.Run, compare.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Sequential
	if s == nil || s.Scored != 100 || s.Total != len(set.Items) || s.Reason != sequential.Budget || s.Decided || s.CI != st.CI || c.CI != st.CI {
		t.Errorf("compare: %+v, CI %v; the run stopped with %+v", s, c.CI, st)
	}
	if c.Verdict == compare.NoChange && s.NoChangeLargerThan() <= 0 {
		t.Errorf("an undecided run says no change larger than ±%v", s.NoChangeLargerThan())
	}
}

// The baseline model against itself: every paired difference is 0, so the
// sequence settles inside ±min-effect and the run stops well before the
// end with no change.
func TestUntilDecidesEquivalence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set := testSet(t, 20)
	m := testmodel.RandomBigram(3)
	base := baseRun(t, dir, set, m)
	o := runOpts(filepath.Join(dir, "head.jsonl"), set)
	o.Selection.Until = until(t, base, 2, 0)
	res, err := Run(context.Background(), m, o)
	if err != nil {
		t.Fatal(err)
	}
	st := res.Run.Header.Sequential.Stop
	if st == nil || st.Reason != sequential.Within || st.Scored >= len(set.Items) || st.CI[0] < -2 || st.CI[1] > 2 {
		t.Fatalf("stop %+v of %d items, want within ±2 points before the end", st, len(set.Items))
	}
	c, err := compare.Runs(base, res.Run, compare.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Verdict != compare.NoChange || !c.Sequential.Decided || c.OnlyBase != len(set.Items)-st.Scored {
		t.Errorf("compare: verdict %s, sequential %+v", c.Verdict, c.Sequential)
	}
}

func TestUntilRefusesSubsets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set := testSet(t, 3)
	m := testmodel.RandomBigram(3)
	baseOut := filepath.Join(dir, "base.jsonl")
	o := runOpts(baseOut, set)
	o.Selection.Sample = 20
	if _, err := Run(context.Background(), m, o); err != nil {
		t.Fatal(err)
	}
	base, err := runfile.ReadFile(baseOut)
	if err != nil {
		t.Fatal(err)
	}
	o = runOpts(filepath.Join(dir, "head.jsonl"), set)
	o.Selection.Until = until(t, base, 1, 0)
	if _, err := Run(context.Background(), m, o); err == nil || !strings.Contains(err.Error(), "not in the baseline") {
		t.Errorf("a baseline of a sample: %v", err)
	}
	o.Selection.Sample = 10
	if _, err := Run(context.Background(), m, o); err == nil || !strings.Contains(err.Error(), "--sample") {
		t.Errorf("--until with --sample: %v", err)
	}
}

// Sequential shards each score their deal of the seeded order; merged,
// they are a prefix of it, and compare replays them as one sequence.
func TestUntilShardsMerge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set := testSet(t, 10)
	base := baseRun(t, dir, set, testmodel.RandomBigram(3))
	order := sequential.Order(itemIDs(base.Items), nil, sequential.DefaultSeed)
	var shards []*runfile.Run
	for i := 1; i <= 2; i++ {
		o := runOpts(filepath.Join(dir, "shard"+string(rune('0'+i))+".jsonl"), set)
		o.Header.Rand = strings.NewReader(strings.Repeat(string(rune('a'+i)), 64))
		o.Selection.Shard = &runfile.Shard{Index: i, Count: 2}
		o.Selection.Until = until(t, base, 0, 40)
		res, err := Run(context.Background(), testmodel.RandomBigram(4), o)
		if err != nil {
			t.Fatal(err)
		}
		for j, it := range res.Run.Items {
			if want := order[2*j+i-1]; it.ID != want {
				t.Fatalf("shard %d record %d is %s, want %s (position %d of the order)", i, j, it.ID, want, 2*j+i-1)
			}
		}
		shards = append(shards, res.Run)
	}
	merged, err := evals.Merge(shards)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Header.Sequential == nil || merged.Header.Sequential.Stop != nil {
		t.Fatalf("merged sequential header %+v", merged.Header.Sequential)
	}
	c, err := compare.Runs(base, merged, compare.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Sequential; s == nil || s.Scored != merged.Len() || s.LeftOut != 0 {
		t.Errorf("merged shards: sequential %+v of %d records", s, merged.Len())
	}
}
