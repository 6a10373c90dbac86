package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// An audit is stored once per report, filed under its model and commit,
// listed with the runs of that commit only; a write bumps the generation
// the page cache keys on, and a refused one stores nothing.
func TestPutAudit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	sp := servertest.Spec{Seed: 3}
	h := sp.Header()
	put(t, s, sp, store.PutOptions{})
	a := store.NewAudit{Model: h.Model.Name, Revision: h.Model.Revision, Git: h.Git, Artifact: "m-q4_0.gguf [q4_0]",
		Verdict: "fail", Report: []byte(`{"verdict":"fail"}`)}
	gen0, _ := s.Generation(ctx)
	got, created, err := s.PutAudit(ctx, a)
	if err != nil || !created || got.ID != store.AuditIDOf(a.Report) || got.Repo != h.Git.Repo || got.SHA != h.Git.SHA || string(got.Report) != string(a.Report) {
		t.Fatalf("put: %+v, %v, %v", got, created, err)
	}
	gen1, _ := s.Generation(ctx)
	again, created, err := s.PutAudit(ctx, a)
	if gen2, _ := s.Generation(ctx); err != nil || created || again.ID != got.ID || gen1 == gen0 || gen2 != gen1 {
		t.Fatalf("the same report again: %+v, %v, %v; generations %d %d %d", again, created, err, gen0, gen1, gen2)
	}
	for _, bad := range []struct {
		name string
		edit func(*store.NewAudit)
		want string
	}{
		{"verdict", func(n *store.NewAudit) { n.Verdict = "maybe" }, "verdict"},
		{"repository", func(n *store.NewAudit) { n.Git.Repo = "nope" }, "git.repo"},
		{"model", func(n *store.NewAudit) { n.Model = "a b" }, "model name"},
		{"sha", func(n *store.NewAudit) { n.Git.SHA = "<script>" }, "git.sha"},
		{"report", func(n *store.NewAudit) { n.Report = []byte("{") }, "not JSON"},
	} {
		n := a
		n.Report = []byte(`{"other":1}`)
		bad.edit(&n)
		var inv *store.InvalidError
		if _, _, err := s.PutAudit(ctx, n); !errors.As(err, &inv) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want an invalid error naming %q", bad.name, err, bad.want)
		}
	}
	as, err := s.ModelAudits(ctx, h.Git.Repo, h.Model.Name)
	if err != nil || len(as) != 1 || as[0].Report != nil {
		t.Fatalf("model audits %+v, %v: want the one, without its report", as, err)
	}
	if as, _ := s.CommitAudits(ctx, h.Git.Repo, h.Model.Name, h.Model.Revision, h.Git.SHA); len(as) != 1 || string(as[0].Report) != string(a.Report) {
		t.Errorf("commit audits %+v, want the one with its report", as)
	}
	for _, other := range []runfile.Git{{Repo: "someone/else", SHA: h.Git.SHA}, {Repo: h.Git.Repo, SHA: "0123"}} {
		if as, _ := s.CommitAudits(ctx, other.Repo, h.Model.Name, h.Model.Revision, other.SHA); len(as) != 0 {
			t.Errorf("%+v: %d audits of another commit or repository", other, len(as))
		}
	}
	if ids, err := s.CommitRunIDs(ctx, h.Git.Repo, h.Model.Name, h.Model.Revision, h.Git.SHA); err != nil || len(ids) != 1 || ids[0] != h.ID {
		t.Errorf("runs of the commit %v, %v; want %s", ids, err, h.ID)
	}
	if _, err := s.GetAudit(ctx, "audit-00"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an unknown audit: %v", err)
	}
}
