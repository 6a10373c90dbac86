package store_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// TestBaselineRuleIsOne ties the places a baseline is chosen to one
// rule: the newest run Baseline answers, the run an upload is checked
// against when it names none, a run an upload names, and the run pinned as
// an anchor. For each kind of run, all agree on whether it can be a
// baseline (issues 41, 48).
func TestBaselineRuleIsOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	older := servertest.Spec{ID: "older", Seed: 1, Started: day(1)}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) *runfile.Run
		// broken makes the stored row's score infinite, as rows stored
		// before uploads were checked may hold.
		broken bool
		can    bool
	}{
		{"a whole run", func(*testing.T) *runfile.Run { return servertest.Spec{ID: "cand", Seed: 2, Started: day(2)}.Run() }, false, true},
		{"a sampled run, whole for its sample", func(*testing.T) *runfile.Run {
			r := servertest.Spec{ID: "cand", Seed: 2, Started: day(2), Records: 50}.Run()
			r.Header.Dataset.Count = 200
			r.Header.Sample = &runfile.Sample{N: 50, Seed: 1, IDs: r.IDs()}
			return r
		}, false, true},
		{"fewer records than its dataset", func(*testing.T) *runfile.Run {
			r := servertest.Spec{ID: "cand", Seed: 2, Started: day(2), Records: 50}.Run()
			r.Header.Dataset.Count = 200
			return r
		}, false, false},
		{"a sequential run", func(t *testing.T) *runfile.Run {
			r, err := servertest.Sequential(older.Run(), servertest.Spec{ID: "cand", Seed: 2, Started: day(2)}, 60, 4, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}, false, false},
		{"an infinite score", func(*testing.T) *runfile.Run { return servertest.Spec{ID: "cand", Seed: 2, Started: day(2)}.Run() }, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "runs.db")
			s, err := store.Open(ctx, path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			put(t, s, older, store.PutOptions{})
			if _, err := server.Ingest(ctx, s, tc.run(t), store.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.broken {
				db, err := sql.Open("sqlite", path)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(`UPDATE runs SET score = 9e999 WHERE id = 'cand'`); err != nil {
					t.Fatal(err)
				}
				db.Close()
			}
			h := older.Run().Header
			b, err := s.Baseline(ctx, h.Git.Repo, h.Model.Name, "main", h.Test)
			if err != nil {
				t.Fatal(err)
			}
			picked := put(t, s, servertest.Spec{ID: "pr", Seed: 3, Started: day(3), Ref: "pr"}, store.PutOptions{}).Run.BaselineID
			_, err = server.Ingest(ctx, s, servertest.Spec{ID: "asks", Seed: 4, Started: day(4), Ref: "pr"}.Run(), store.PutOptions{BaselineID: "cand"})
			var bb *store.BadBaselineError
			if err != nil && !errors.As(err, &bb) {
				t.Fatal(err)
			}
			// An anchor is pinned by the same rule (issue 48).
			_, pinErr := s.PinAnchor(ctx, "cand", store.Token{Repo: h.Git.Repo}, nil)
			got := [4]bool{b.ID == "cand", picked == "cand", err == nil, pinErr == nil}
			if want := [4]bool{tc.can, tc.can, tc.can, tc.can}; got != want {
				t.Errorf("can be a baseline (Baseline, picked, named, pinned as the anchor): %v, want %v (named: %v; pinned: %v)", got, want, err, pinErr)
			}
		})
	}
}
