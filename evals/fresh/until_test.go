package fresh

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Fresh Text scored until decided: the documents in the seeded order, and
// the engine stopped at the decision or the budget, the stop in the header.
func TestRunUntilDecided(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := genData(200)
	base, err := Run(context.Background(), newByteModel(3), runOptions(data, filepath.Join(dir, "base.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(base.Run.Docs))
	for i, d := range base.Run.Docs {
		ids[i] = d.ID
	}
	order := sequential.Order(ids, sequential.DefaultSeed)
	for _, tc := range []struct {
		name      string
		seed      int64
		minEffect float64
		budget    int
		reason    string
		scored    int
	}{
		// the same model: every difference is 0, inside ±0.01 at the first look
		{"same model", 3, 0.01, 0, sequential.Within, sequential.DefaultMinRecords},
		// a budget below the fewest records a decision needs
		{"budget", 4, 0.01, 30, sequential.Budget, 30},
	} {
		h, tr, err := compare.StartSequential(base.Run, runfile.TestFresh, sequential.DefaultSeed, 0.95, tc.minEffect, "")
		if err != nil {
			t.Fatal(err)
		}
		o := runOptions(data, filepath.Join(dir, tc.name+".jsonl"))
		o.Selection.Until = &evals.Until{Header: h, Tracker: tr, MaxRecords: tc.budget}
		res, err := Run(context.Background(), newByteModel(tc.seed), o)
		if err != nil {
			t.Fatal(err)
		}
		st := res.Run.Header.Sequential.Stop
		if st == nil || st.Reason != tc.reason || st.Scored != tc.scored || res.Run.Len() != tc.scored {
			t.Fatalf("%s: stop %+v with %d records, want %s after %d", tc.name, st, res.Run.Len(), tc.reason, tc.scored)
		}
		got := make([]string, len(res.Run.Docs))
		for i, d := range res.Run.Docs {
			got[i] = d.ID
		}
		if !slices.Equal(got, order[:tc.scored]) {
			t.Errorf("%s: documents not in the seeded order", tc.name)
		}
	}
}
