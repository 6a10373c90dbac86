package action

import (
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/comparetest"
)

// A sequential head (until: decided, the default on pull requests) that
// stopped on main's 0.002 minimum effect is held, since the anchor, to
// the drift budget: a drift of 0.007 is clear, and within a 0.01 budget.
func TestJudgeDriftOfSequentialHead(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(2000, 3, 0.95, 0.2)
	anchor := comparetest.FreshRun("anchor", "m", docs)
	full := comparetest.FreshRun("head", "m", comparetest.Jittered(comparetest.Shifted(docs, 0.007), 4, 0.0005))
	head := comparetest.SequentialHead(anchor, full, 1500, 0.002)
	for _, tt := range []struct {
		budget float64
		want   compare.Verdict
	}{{0.01, compare.NoChange}, {0.004, compare.Regressed}} {
		c, err := compare.Runs(anchor, head, compare.Options{Resamples: 500, HeadlineOnly: true, MinEffect: compare.MinEffect{BPB: tt.budget}})
		if err != nil {
			t.Fatal(err)
		}
		if c.Sequential == nil {
			t.Fatalf("not judged as a sequential run: %v", c.Notes)
		}
		judgeDrift(c, tt.budget)
		if c.Verdict != tt.want || c.MinEffect != tt.budget {
			t.Errorf("budget %v: %s (min effect %v), delta %.4f %v; want %s", tt.budget, c.Verdict, c.MinEffect, c.Delta, c.CI, tt.want)
		}
	}
}
