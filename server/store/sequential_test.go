package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// A sequential run stops before the end of the set, so it is stored and
// shown but never picked as a baseline.
func TestSequentialRunIsNeverABaseline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	put(t, s, servertest.Spec{ID: "main-full", Seed: 1, Started: day(1)}, store.PutOptions{})
	seq := servertest.Spec{ID: "main-seq", Seed: 2, Started: day(2)}.Run()
	seq.Header.Sequential = &runfile.Sequential{Rule: runfile.RuleUntilDecided, Seed: 1, Level: 0.95, MinEffect: 1,
		Baseline: "main-full", Total: seq.Len() + 100, Stop: &runfile.Stop{Reason: "within", Scored: seq.Len(), CI: [2]float64{-0.5, 0.5}}}
	if _, err := s.PutRun(ctx, seq, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadRun(ctx, "main-seq")
	if err != nil || got.Header.Sequential == nil || got.Header.Sequential.Stop.Scored != seq.Len() {
		t.Fatalf("the stored sequential header: %v %+v", err, got)
	}
	b, err := s.Baseline(ctx, servertest.Spec{}.Run().Header.Git.Repo, servertest.Spec{}.Run().Header.Model.Name, "main", runfile.TestProbes)
	if err != nil || b.ID != "main-full" {
		t.Fatalf("baseline %v, %v; want main-full", b, err)
	}
	res := put(t, s, servertest.Spec{ID: "pr", Seed: 3, Started: day(3), Ref: "pr"}, store.PutOptions{})
	if res.Run.BaselineID != "main-full" {
		t.Errorf("a PR run's baseline is %q, want main-full (not the sequential run)", res.Run.BaselineID)
	}
}
