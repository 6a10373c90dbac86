package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// TestMigrationKeysRunsByRepo: a database made at schema 1 (runs keyed by
// model alone) opens at schema 2 with every run kept and keyed by its
// header's git.repo; a run whose header names no repository stays, under
// the empty repository, readable but never a baseline.
func TestMigrationKeysRunsByRepo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);
		INSERT INTO schema_migrations VALUES (1, '0001_init.sql', 0);` + string(v1)); err != nil {
		t.Fatal(err)
	}
	insert := func(id, column string, r *runfile.Run) {
		t.Helper()
		h, _ := json.Marshal(r.Header)
		_, err := db.Exec(`INSERT INTO runs (id, test, model, revision, repo, sha, ref, pr, started_at, uploaded_at,
			n_records, metric, score, ci_lo, ci_hi, baseline_id, flags, header, summary, content_sha256)
			VALUES (?, 'probes', ?, 'r', ?, 's', 'main', NULL, ?, 0, ?, 'accuracy', 50, 40, 60, NULL, '[]', ?, '{}', 'x')`,
			id, r.Header.Model.Name, column, r.Header.StartedAt.UnixNano(), r.Len(), string(h))
		if err != nil {
			t.Fatal(err)
		}
		for i := range r.Items {
			b, _ := json.Marshal(r.Items[i])
			if _, err := db.Exec(`INSERT INTO records (run_id, idx, rec_id, data) VALUES (?, ?, ?, ?)`, id, i, r.Items[i].ID, string(b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	const m = "acme/m1"
	a := servertest.Spec{ID: "a", Repo: "acme/train", Model: m, Seed: 1, Records: 3}.Run()
	insert("a", "acme/train", a)
	b := servertest.Spec{ID: "b", Repo: "acme/train", Model: m, Seed: 2, Records: 3}.Run()
	insert("b", "", b) // the column lost its repository; the header has it
	c := servertest.Spec{ID: "c", Model: m, Seed: 30, Records: 3}.Run()
	c.Header.Git.Repo = ""
	insert("c", "", c) // no repository anywhere, and the newest run
	// A sequential run stored before the store judged coverage (issue 39):
	// the newest of acme's, and never its baseline once opened.
	d := servertest.Spec{ID: "d", Repo: "acme/train", Model: m, Seed: 40, Records: 3}.Run()
	d.Header.Sequential = &runfile.Sequential{Rule: runfile.RuleUntilDecided, Seed: 1, Level: 0.95, Baseline: "a", Total: 3}
	insert("d", "acme/train", d)
	db.Close()

	s, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != 7 {
		t.Fatalf("schema version %d, %v", v, err)
	}
	if runs, _, _ := s.Counts(ctx); runs != 4 {
		t.Fatalf("%d runs after the migration, want 4", runs)
	}
	repos, err := s.ModelRepos(ctx, m)
	if err != nil || strings.Join(repos, ",") != ",acme/train" {
		t.Fatalf("repositories of %s: %q %v", m, repos, err)
	}
	p, err := s.ModelRuns(ctx, "acme/train", m, store.Filter{})
	if err != nil || len(p.Runs) != 3 || p.Runs[0].ID != "d" || p.Runs[0].Partial != "3 of 3, sequential" {
		t.Fatalf("acme's runs: %+v %v", p.Runs, err)
	}
	if p, err := s.ModelRuns(ctx, "", m, store.Filter{}); err != nil || len(p.Runs) != 1 || p.Runs[0].ID != "c" {
		t.Fatalf("runs without a repository: %+v %v", p.Runs, err)
	}
	base, err := s.Baseline(ctx, "acme/train", m, "main", runfile.TestProbes)
	if err != nil || base.ID != "b" {
		t.Fatalf("baseline %v %v, want b (c has no repository, d is sequential)", base, err)
	}
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}
