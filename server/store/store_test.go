package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

func open(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func put(t *testing.T, s *store.Store, sp servertest.Spec, opt store.PutOptions) store.PutResult {
	t.Helper()
	res, err := server.Ingest(context.Background(), s, sp.Run(), opt)
	if err != nil {
		t.Fatalf("put %s: %v", sp.ID, err)
	}
	return res
}

func TestPutRunRoundTripAndIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	for _, test := range []string{runfile.TestFresh, runfile.TestProbes} {
		sp := servertest.Spec{Test: test, Seed: 7, Records: 300, PR: 12, Ref: "feature/x"}
		want := sp.Run()
		first := put(t, s, sp, store.PutOptions{})
		if !first.Created {
			t.Fatalf("%s: first upload not created", test)
		}
		again := put(t, s, sp, store.PutOptions{})
		if again.Created {
			t.Fatalf("%s: second upload of the same run was stored again", test)
		}
		if first.Run.ID != again.Run.ID || first.Run.Score != again.Run.Score {
			t.Fatalf("%s: second upload returned %+v, first %+v", test, again.Run, first.Run)
		}
		got, err := s.LoadRun(ctx, sp.Run().Header.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Docs, want.Docs) || !reflect.DeepEqual(got.Items, want.Items) {
			t.Fatalf("%s: records differ after the round trip", test)
		}
		if !got.Header.StartedAt.Equal(want.Header.StartedAt) || got.Header.ID != want.Header.ID || *got.Header.Git.PR != 12 {
			t.Fatalf("%s: header differs: %+v", test, got.Header)
		}
		// The stored score is the one the records give, not a client's claim.
		var value float64
		if test == runfile.TestFresh {
			value = runfile.SummarizeFresh(want.Docs).BPB
		} else {
			value = runfile.SummarizeProbes(want.Items).Accuracy
		}
		sc := first.Run.Score
		if sc.Value != value || !(sc.Lo <= value && value <= sc.Hi) || sc.Lo == sc.Hi {
			t.Fatalf("%s: score %+v, want value %v inside a non-empty interval", test, sc, value)
		}
	}
	runs, records, err := s.Counts(ctx)
	if err != nil || runs != 2 || records != 600 {
		t.Fatalf("counts = %d runs, %d records, %v; want 2, 600", runs, records, err)
	}
}

func TestPutRunConflict(t *testing.T) {
	t.Parallel()
	s := open(t)
	put(t, s, servertest.Spec{ID: "r1", Seed: 1}, store.PutOptions{})
	_, err := server.Ingest(context.Background(), s, servertest.Spec{ID: "r1", Seed: 2}.Run(), store.PutOptions{})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
}

func TestBaselineAndFlags(t *testing.T) {
	t.Parallel()
	s := open(t)
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	put(t, s, servertest.Spec{ID: "main-1", Seed: 1, Started: day(1)}, store.PutOptions{})
	put(t, s, servertest.Spec{ID: "main-2", Seed: 2, Started: day(3), Engine: "llama.cpp newer"}, store.PutOptions{})
	// Another model's and another test's runs never serve as baseline.
	put(t, s, servertest.Spec{ID: "other", Seed: 3, Started: day(4), Model: "org/other"}, store.PutOptions{})
	put(t, s, servertest.Spec{ID: "fresh", Seed: 3, Started: day(4), Test: runfile.TestFresh}, store.PutOptions{})

	tests := []struct {
		name     string
		spec     servertest.Spec
		opt      store.PutOptions
		baseline string
		flags    []string
		err      string
	}{
		{"first run has no baseline", servertest.Spec{ID: "old", Seed: 4, Started: day(1).Add(-time.Hour), Ref: "pr"}, store.PutOptions{}, "", nil, ""},
		{"newest main run before it", servertest.Spec{ID: "pr-a", Seed: 5, Started: day(2), Ref: "pr"}, store.PutOptions{}, "main-1", nil, ""},
		{"engine differs from newest", servertest.Spec{ID: "pr-b", Seed: 6, Started: day(5), Ref: "pr"}, store.PutOptions{}, "main-2", []string{"engine"}, ""},
		{"named baseline", servertest.Spec{ID: "pr-c", Seed: 7, Started: day(5), Ref: "pr"}, store.PutOptions{BaselineID: "main-1"}, "main-1", nil, ""},
		{"other base ref", servertest.Spec{ID: "pr-d", Seed: 8, Started: day(6), Ref: "pr"}, store.PutOptions{BaseRef: "pr"}, "pr-c", nil, ""},
		{"unknown named baseline", servertest.Spec{ID: "pr-e", Seed: 9, Started: day(6)}, store.PutOptions{BaselineID: "nope"}, "", nil, "not stored"},
		{"baseline of another test", servertest.Spec{ID: "pr-f", Seed: 9, Started: day(6)}, store.PutOptions{BaselineID: "fresh"}, "", nil, "fresh run"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := server.Ingest(context.Background(), s, tc.spec.Run(), tc.opt)
			if tc.err != "" {
				var bb *store.BadBaselineError
				if !errors.As(err, &bb) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want a BadBaselineError with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, d := range res.Run.Flags {
				keys = append(keys, d.Key)
			}
			if res.Run.BaselineID != tc.baseline || !reflect.DeepEqual(keys, tc.flags) {
				t.Fatalf("baseline %q flags %v, want %q %v", res.Run.BaselineID, keys, tc.baseline, tc.flags)
			}
		})
	}
}

func TestModelRunsFiltersAndPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	for i := range 25 {
		ref := "main"
		if i%5 == 4 {
			ref = "pr-branch"
		}
		test := runfile.TestProbes
		if i%2 == 1 {
			test = runfile.TestFresh
		}
		put(t, s, servertest.Spec{Seed: uint64(i), Ref: ref, Test: test, Records: 20}, store.PutOptions{})
	}
	var seen []string
	cur := ""
	for pages := 0; ; pages++ {
		p, err := s.ModelRuns(ctx, "udgamlabs/smol-train", "HuggingFaceTB/SmolLM2-135M", store.Filter{Ref: "main", Limit: 7, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Runs {
			if r.Ref != "main" {
				t.Fatalf("run %s on ref %s in a main-only page", r.ID, r.Ref)
			}
			if len(seen) > 0 && r.StartedAt.After(mustRun(t, s, seen[len(seen)-1]).StartedAt) {
				t.Fatalf("run %s out of order", r.ID)
			}
			seen = append(seen, r.ID)
		}
		if p.Next == "" {
			break
		}
		cur = p.Next
	}
	if len(seen) != 20 {
		t.Fatalf("paged through %d main runs, want 20", len(seen))
	}
	p, err := s.ModelRuns(ctx, "udgamlabs/smol-train", "HuggingFaceTB/SmolLM2-135M", store.Filter{Test: runfile.TestFresh,
		Since: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC).Add(10 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 7 { // odd seeds 11..23
		t.Fatalf("fresh runs since hour 10: %d, want 7", len(p.Runs))
	}
	if _, err := s.ModelRuns(ctx, "udgamlabs/smol-train", "HuggingFaceTB/SmolLM2-135M", store.Filter{Cursor: "bogus"}); err == nil {
		t.Fatal("a forged cursor was accepted")
	}
	b, err := s.Baseline(ctx, "udgamlabs/smol-train", "HuggingFaceTB/SmolLM2-135M", "main", runfile.TestFresh)
	if err != nil || b.ID != "fresh-23" {
		t.Fatalf("baseline = %v, %v; want fresh-23", b, err)
	}
	if _, err := s.Baseline(ctx, "udgamlabs/smol-train", "nobody/none", "main", runfile.TestFresh); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("baseline of an unknown model: %v, want ErrNotFound", err)
	}
	ms, err := s.Models(ctx, "", "main", 5, false)
	if err != nil || len(ms) != 2 || ms[0].Runs+ms[1].Runs != 25 || len(ms[0].Recent) != 5 {
		t.Fatalf("models = %+v, %v", ms, err)
	}
}

func mustRun(t *testing.T, s *store.Store, id string) *store.Run {
	t.Helper()
	r, err := s.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheckRunRefusesBadRuns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(r *runfile.Run)
		want string
	}{
		{"path trick id", func(r *runfile.Run) { r.Header.ID = "../../etc/passwd" }, "run id"},
		{"sql in model", func(r *runfile.Run) { r.Header.Model.Name = "x'; DROP TABLE runs; --" }, "model name"},
		{"control char in ref", func(r *runfile.Run) { r.Header.Git.Ref = "main\n" }, "git ref"},
		{"empty model segment", func(r *runfile.Run) { r.Header.Model.Name = "org//m" }, "model name"},
		{"no repo", func(r *runfile.Run) { r.Header.Git.Repo = "" }, "git.repo"},
		{"html in revision", func(r *runfile.Run) { r.Header.Model.Revision = "<b>" }, "model.revision"},
		{"no records", func(r *runfile.Run) { r.Items = nil }, "no records"},
		{"records of another test", func(r *runfile.Run) { r.Docs = []runfile.Doc{{ID: "d"}} }, "another test"},
		{"shard", func(r *runfile.Run) { r.Header.Shard = &runfile.Shard{Index: 1, Count: 2} }, "shard"},
		{"no start time", func(r *runfile.Run) { r.Header.StartedAt = time.Time{} }, "started_at"},
		{"zero pr", func(r *runfile.Run) { z := 0; r.Header.Git.PR = &z }, "git.pr"},
	}
	s := open(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := servertest.Spec{Records: 5}.Run()
			tc.edit(r)
			_, err := s.CheckRun(r, store.PutOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	// The baseline an upload asks for is checked with it.
	for _, opt := range []store.PutOptions{{BaseRef: "main\n"}, {BaselineID: "../x"}} {
		if _, err := s.CheckRun(servertest.Spec{Records: 5}.Run(), opt); err == nil {
			t.Errorf("options %+v: accepted", opt)
		}
	}
	seq := servertest.Spec{Records: 5}.Run()
	seq.Header.Sequential = &runfile.Sequential{Rule: runfile.RuleUntilDecided, Level: 0.95, Baseline: "a b", Total: 5}
	if _, err := s.CheckRun(seq, store.PutOptions{}); err == nil || !strings.Contains(err.Error(), "sequential.baseline") {
		t.Errorf("a sequential run against baseline %q: %v", "a b", err)
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	secret, tok, err := s.CreateToken(ctx, "org/repo")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateToken(ctx, "not a repo"); err == nil {
		t.Fatal("a bad repository name was accepted")
	}
	got, err := s.CheckToken(ctx, secret)
	if err != nil || got.Repo != "org/repo" || got.ID != tok.ID {
		t.Fatalf("check = %+v, %v", got, err)
	}
	if !strings.HasPrefix(secret, tok.Prefix) {
		t.Fatalf("prefix %q is not the start of the secret", tok.Prefix)
	}
	for _, bad := range []string{"", secret + "x", "udgci_", strings.ToUpper(secret)} {
		if _, err := s.CheckToken(ctx, bad); !errors.Is(err, store.ErrBadToken) {
			t.Fatalf("check(%q) = %v, want ErrBadToken", bad, err)
		}
	}
	if err := s.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckToken(ctx, secret); !errors.Is(err, store.ErrBadToken) {
		t.Fatalf("a revoked token still works: %v", err)
	}
	if err := s.RevokeToken(ctx, 999); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoke unknown = %v", err)
	}
	ts, err := s.ListTokens(ctx)
	if err != nil || len(ts) != 1 || ts[0].RevokedAt == nil {
		t.Fatalf("list = %+v, %v", ts, err)
	}
	// The secret itself is nowhere in the database file.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	raw := readAll(t, s.Path())
	if bytes.Contains(raw, []byte(secret)) {
		t.Fatal("the token secret is stored in the database")
	}
}

func TestReopenKeepsDataAndSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	s, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, servertest.Spec{ID: "keep", Seed: 1}, store.PutOptions{})
	s.Close()
	s, err = store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != 7 {
		t.Fatalf("schema version %d, %v", v, err)
	}
	if _, err := s.GetRun(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(ctx, path+"?mode=memory", store.Options{}); err == nil {
		t.Fatal("a path with ? was accepted")
	}
}

func TestScoreRunDeterministic(t *testing.T) {
	t.Parallel()
	r := servertest.Spec{Test: runfile.TestFresh, Records: 500, Seed: 3}.Run()
	a, b := compare.ScoreRun(r), compare.ScoreRun(r)
	if a != b {
		t.Fatalf("two scorings differ: %+v %+v", a, b)
	}
	// The interval depends on the records, not on the run's id: the same
	// records pushed under another id (a fresh demo) get the same one.
	r.Header.ID = "another-id"
	if c := compare.ScoreRun(r); c != a {
		t.Fatalf("the same records under another id: %+v, was %+v", c, a)
	}
	// 500 documents with a per-document spread of 0.15 bpb: the interval is
	// roughly +-2*0.15/sqrt(500) wide, far from zero and far from 1.
	if w := a.Hi - a.Lo; w < 0.005 || w > 0.05 {
		t.Fatalf("interval width %v is implausible for %+v", w, a)
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	var all []byte
	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// The exact accuracy interval agrees with a brute-force bootstrap.
func TestProbeIntervalMatchesBootstrap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, k int }{{200, 90}, {2000, 888}, {50, 3}, {30, 30}} {
		items := make([]runfile.Item, tc.n)
		for i := range items {
			items[i] = runfile.Item{ID: fmt.Sprint(i), Logprobs: []float64{0, -1}, Correct: i < tc.k}
		}
		r := &runfile.Run{Header: runfile.Header{ID: "x", Test: runfile.TestProbes}, Items: items}
		got := compare.ScoreRun(r)
		rng := rand.New(rand.NewPCG(1, 2))
		const B = 20000
		vals := make([]float64, B)
		for b := range vals {
			c := 0
			for range tc.n {
				if rng.IntN(tc.n) < tc.k {
					c++
				}
			}
			vals[b] = 100 * float64(c) / float64(tc.n)
		}
		slices.Sort(vals)
		lo, hi := vals[B*25/1000], vals[B*975/1000-1]
		step := 100 / float64(tc.n) // one item either way is bootstrap noise
		if math.Abs(got.Lo-lo) > step+1e-9 || math.Abs(got.Hi-hi) > step+1e-9 {
			t.Errorf("n=%d k=%d: exact [%v, %v], bootstrap [%v, %v]", tc.n, tc.k, got.Lo, got.Hi, lo, hi)
		}
		if got.Value != 100*float64(tc.k)/float64(tc.n) {
			t.Errorf("value %v", got.Value)
		}
	}
}

// Several processes (here: stores) opening a new file at once all migrate
// it without error, and the schema is applied once.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := store.Open(context.Background(), path, store.Options{})
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	again, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if v, err := again.SchemaVersion(context.Background()); err != nil || v != 7 {
		t.Fatalf("schema version %d, %v", v, err)
	}
}

// The store takes only a run its CheckRun accepted: it never checks one
// itself, so an upload is checked once.
func TestPutRunTakesOnlyCheckedRuns(t *testing.T) {
	t.Parallel()
	s := open(t)
	if _, err := s.PutRun(context.Background(), store.NewRun{Score: store.Score{Metric: "accuracy"}}); err == nil {
		t.Fatal("PutRun stored a run that was not checked")
	}
	if runs, _, _ := s.Counts(context.Background()); runs != 0 {
		t.Fatalf("%d runs stored", runs)
	}
}
