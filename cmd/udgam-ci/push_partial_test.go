package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// TestPushRefusesPartialBaseline: push --baseline naming a sequential run
// fails loudly, and so does the upload of a sequential run whose header's
// stop its records do not replay to (issue 39).
func TestPushRefusesPartialBaseline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live := servertest.Start(t, server.Config{CompareResamples: 200}, "udgamlabs/smol-train")
	full := servertest.Spec{ID: "main-full", Seed: 1}
	seq, err := servertest.Sequential(full.Run(), servertest.Spec{ID: "main-seq", Seed: 2}, 60, 3, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	forged := *seq
	forged.Header.ID = "main-forged"
	q := *seq.Header.Sequential
	q.Stop = &runfile.Stop{Reason: "complete", Scored: q.Total, CI: q.Stop.CI}
	forged.Header.Sequential = &q
	write := func(r *runfile.Run) string {
		path := filepath.Join(dir, r.Header.ID+".jsonl")
		if err := runfile.WriteFile(path, r); err != nil {
			t.Fatal(err)
		}
		return path
	}
	push := []string{"push", "--server", live.URL, "--token", live.Tokens[0]}
	if code, _, stderr := runBinary(t, dir, nil, append(push, write(full.Run()), write(seq))...); code != 0 {
		t.Fatalf("push of a baseline and its sequential run: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runBinary(t, dir, nil, append(push, write(&forged))...); code == 0 || !strings.Contains(stderr, "claim is refused") {
		t.Errorf("push of a header claiming a complete stop after 60 records: exit %d: %s", code, stderr)
	}
	pr := servertest.Spec{ID: "pr", Seed: 4, Ref: "feature"}.Run()
	code, _, stderr := runBinary(t, dir, nil, append(push, "--baseline", "main-seq", write(pr))...)
	if code == 0 || !strings.Contains(stderr, "partial") {
		t.Errorf("push --baseline main-seq: exit %d: %s", code, stderr)
	}
}
