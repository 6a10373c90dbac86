package action_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/action"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/audit/audittest"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// The Action uploads an audit with the four run files in its audit
// folder, from which a real report server recomputes it; without them
// the upload fails, naming them (issue 39).
func TestServerUploadsAuditWithItsRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	git := runfile.Git{Repo: "acme/train", SHA: strings.Repeat("a", 40), Ref: "main"}
	live := servertest.Start(t, server.Config{}, git.Repo)

	rep, files := audittest.Judged(t, audittest.Spec{Model: runfile.Model{Name: "acme/m", Revision: strings.Repeat("b", 40)}, Git: git,
		Items: 120, Seed: 3, KL: audit.KL{Tokens: 10, Mean: 0.01, P99: 0.1, Max: 0.2, SameTop: 0.9}})
	dir := t.TempDir()
	for name, r := range files.ByName() {
		if err := runfile.WriteFile(filepath.Join(dir, name), r); err != nil {
			t.Fatal(err)
		}
	}
	s := action.NewServer(live.URL, live.Tokens[0], nil)
	up, err := s.UploadAudit(ctx, rep, dir)
	if err != nil || !strings.Contains(up.URL, "/audits/audit-") {
		t.Fatalf("upload with its run files: %+v, %v", up, err)
	}
	if _, err := s.UploadAudit(ctx, rep, t.TempDir()); err == nil || !strings.Contains(err.Error(), audit.RefFreshFile) {
		t.Errorf("upload without its run files: %v, want an error naming %s", err, audit.RefFreshFile)
	}
}
