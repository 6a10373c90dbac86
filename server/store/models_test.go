package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// TestModelsAgreesWithModelRuns: the index's three queries give, for
// every model and test, the same newest run, count and base-branch trend
// as listing that model's runs one by one (issue 32 folded two queries a
// model into three in all).
func TestModelsAgreesWithModelRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for m := range 3 {
		for _, sp := range servertest.History(fmt.Sprintf("org/m-%d", m), 6+4*m, 5) {
			sp.ID = fmt.Sprintf("m%d-%s", m, sp.ID)
			if m == 2 {
				sp.Repo = "other/repo"
			}
			if _, err := server.Ingest(ctx, s, sp.Run(), store.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, repo := range []string{"", "other/repo"} {
		ms, err := s.Models(ctx, repo, "main", 4, true)
		if err != nil {
			t.Fatal(err)
		}
		want := 6
		if repo != "" {
			want = 2
		}
		if len(ms) != want {
			t.Fatalf("repo %q: %d rows, want %d", repo, len(ms), want)
		}
		for _, m := range ms {
			all, err := s.ModelRuns(ctx, m.Repo, m.Model, store.Filter{Test: m.Test})
			if err != nil {
				t.Fatal(err)
			}
			base, err := s.ModelRuns(ctx, m.Repo, m.Model, store.Filter{Test: m.Test, Ref: "main", Limit: 4})
			if err != nil {
				t.Fatal(err)
			}
			var trend []float64
			for _, r := range base.Runs {
				trend = append(trend, r.Score.Value)
			}
			slices.Reverse(trend)
			if m.Runs != len(all.Runs) || m.Latest.ID != all.Runs[0].ID || !slices.Equal(m.Recent, trend) {
				t.Errorf("%s %s %s: %d runs, latest %s, trend %v; want %d, %s, %v", m.Repo, m.Model, m.Test,
					m.Runs, m.Latest.ID, m.Recent, len(all.Runs), all.Runs[0].ID, trend)
			}
		}
	}
}
