package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// A sequential run stops before the end of the set: it is stored with the
// store's own replay of its stop, and is never a baseline, picked or
// requested; nor is a run with fewer records than its set that hides its
// sequential rule. A header whose stop differs from the replay is refused.
func TestSequentialRunIsNeverABaseline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	full := servertest.Spec{ID: "main-full", Seed: 1, Started: day(1)}
	put(t, s, full, store.PutOptions{})
	seq, err := servertest.Sequential(full.Run(), servertest.Spec{ID: "main-seq", Seed: 2, Started: day(2)}, 50, 7, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	forged := *seq
	h := seq.Header
	q := *h.Sequential
	q.Stop = &runfile.Stop{Reason: "complete", Scored: full.Run().Len(), CI: q.Stop.CI}
	h.Sequential, h.ID = &q, "main-forged"
	forged.Header = h
	if _, err := server.Ingest(ctx, s, &forged, store.PutOptions{}); err == nil || !strings.Contains(err.Error(), "claim is refused") {
		t.Fatalf("a header claiming complete after 50 records: %v, want refused", err)
	}
	res, err := server.Ingest(ctx, s, seq, store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rep compare.Sequential
	if r := res.Run; r.Partial != "50 of 200, sequential" || json.Unmarshal(r.Sequential, &rep) != nil || rep.Scored != 50 || r.BaselineID != "main-full" {
		t.Fatalf("stored sequential run: partial %q, replay %s, baseline %q", r.Partial, r.Sequential, r.BaselineID)
	}
	hidden := *seq
	hidden.Header.ID, hidden.Header.Sequential, hidden.Header.StartedAt = "main-hidden", nil, day(3)
	hidden.Header.Dataset.Count = full.Run().Len()
	if res, err := server.Ingest(ctx, s, &hidden, store.PutOptions{}); err != nil || res.Run.Partial != "50 of 200" {
		t.Fatalf("50 of 200 records without a sequential rule: %+v %v", res.Run.Partial, err)
	}
	repo, model := full.Run().Header.Git.Repo, full.Run().Header.Model.Name
	b, err := s.Baseline(ctx, repo, model, "main", runfile.TestProbes)
	if err != nil || b.ID != "main-full" {
		t.Fatalf("baseline %v, %v; want main-full", b, err)
	}
	res = put(t, s, servertest.Spec{ID: "pr", Seed: 3, Started: day(4), Ref: "pr"}, store.PutOptions{})
	if res.Run.BaselineID != "main-full" {
		t.Errorf("a PR run's baseline is %q, want main-full (not a partial run)", res.Run.BaselineID)
	}
	for i, id := range []string{"main-seq", "main-hidden"} {
		_, err := server.Ingest(ctx, s, servertest.Spec{ID: "asks-" + id, Seed: uint64(10 + i), Ref: "pr"}.Run(), store.PutOptions{BaselineID: id})
		var bb *store.BadBaselineError
		if !errors.As(err, &bb) || !strings.Contains(err.Error(), "partial") {
			t.Errorf("partial run %s asked for as a baseline: %v, want refused", id, err)
		}
	}
}

// A repeated upload of a sequential run is answered as stored before its
// stop is replayed: the replay needs the baseline's records, taken away
// here, and a second replay would fail.
func TestRepeatedSequentialUploadNotReplayed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	full := servertest.Spec{ID: "main-full", Seed: 1}
	put(t, s, full, store.PutOptions{})
	seq, err := servertest.Sequential(full.Run(), servertest.Spec{ID: "main-seq", Seed: 2}, 50, 7, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := server.Ingest(ctx, s, seq, store.PutOptions{}); err != nil || !res.Created {
		t.Fatalf("first upload: %+v %v", res, err)
	}
	db, err := sql.Open("sqlite", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM records WHERE run_id = 'main-full'`); err != nil {
		t.Fatal(err)
	}
	res, err := server.Ingest(ctx, s, seq, store.PutOptions{})
	if err != nil || res.Created || res.Run.ID != "main-seq" {
		t.Fatalf("the same run again: created %v, run %q, %v; want found stored without a replay", res.Created, res.Run.ID, err)
	}
	other := *seq
	other.Header.ID = "main-seq-2"
	if _, err := server.Ingest(ctx, s, &other, store.PutOptions{}); err == nil {
		t.Fatal("a new sequential run was stored against a baseline without records")
	}
}

// withSpans gives every document of r windows' spans of 128 tokens (the
// last what is left), its bits shared by tokens, as a run since issue 49
// records them.
func withSpans(r *runfile.Run) {
	for i := range r.Docs {
		d := &r.Docs[i]
		d.Spans = nil
		for left := d.Tokens; left > 0; left -= 128 {
			n := min(128, left)
			d.Spans = append(d.Spans, runfile.Span{Tokens: n, Bits: d.Bits * float64(n) / float64(d.Tokens)})
		}
		d.Windows, d.Bits = len(d.Spans), runfile.SpanBits(d.Spans)
	}
}

// A Fresh Text run over spans is stored with the store's replay of its
// stop against its baseline's stored spans, counted in spans; a header
// whose stop differs is refused.
func TestSequentialRunOverSpans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	base := servertest.Spec{ID: "main-full", Test: runfile.TestFresh, Seed: 1, Records: 40, Started: day(1)}.Run()
	withSpans(base)
	if _, err := server.Ingest(ctx, s, base, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	head := servertest.Spec{ID: "pr-spans", Test: runfile.TestFresh, Seed: 2, Records: 40, Started: day(2), Ref: "pr"}.Run()
	for i := range head.Docs { // the same documents, other bits
		d := base.Docs[i]
		d.Bits *= 1 + 0.05*float64(i%3)
		head.Docs[i] = d
	}
	withSpans(head)
	h, tr, err := compare.StartSequential(base, runfile.TestFresh, 7, 0.95, 0, "")
	if err != nil || h.Unit != runfile.UnitSpan {
		t.Fatalf("start: unit %q, %v", h.Unit, err)
	}
	spans := map[string]runfile.Doc{}
	for i := range head.Docs {
		for _, u := range runfile.SplitSpans(&head.Docs[i]) {
			spans[u.ID] = u
		}
	}
	const n = 60
	head.Docs = nil
	for _, id := range tr.Order(base.IDs(), h.Seed)[:n] {
		head.Docs = append(head.Docs, spans[id])
	}
	head.Header.Sequential = &h
	rep, _, err := compare.ReplaySequential(base, head)
	if err != nil {
		t.Fatal(err)
	}
	h.Stop = &runfile.Stop{Reason: rep.Reason, Scored: rep.Scored, CI: rep.CI}

	forged := *head
	fh := *head.Header.Sequential
	fh.Stop = &runfile.Stop{Reason: "complete", Scored: n, CI: rep.CI}
	forged.Header.ID, forged.Header.Sequential = "pr-forged", &fh
	if _, err := server.Ingest(ctx, s, &forged, store.PutOptions{}); err == nil || !strings.Contains(err.Error(), "claim is refused") {
		t.Fatalf("a header claiming complete after %d spans: %v, want refused", n, err)
	}
	res, err := server.Ingest(ctx, s, head, store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stored compare.Sequential
	if r := res.Run; json.Unmarshal(r.Sequential, &stored) != nil || stored.Scored != n || stored.Unit != runfile.UnitSpan || !strings.HasPrefix(r.Partial, fmt.Sprintf("%d of %d, sequential, ", n, h.Total)) {
		t.Fatalf("stored run over spans: partial %q, replay %s", r.Partial, r.Sequential)
	}
}
