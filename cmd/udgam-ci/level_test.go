package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// TestIntervalLabelsFollowTheLevel: a sequential run decided at level 0.5
// is labelled 50% wherever its interval is shown (the terminal, the PR
// comment's Markdown, the report server's compare, run and history
// pages), and no label says 95% for it (issue 39).
func TestIntervalLabelsFollowTheLevel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live := servertest.Start(t, server.Config{CompareResamples: 200}, "udgamlabs/smol-train")
	full := servertest.Spec{ID: "main-full", Test: runfile.TestFresh, Records: 300, Seed: 1}
	seq, err := servertest.Sequential(full.Run(), servertest.Spec{ID: "pr-seq", Test: runfile.TestFresh, Records: 300, Seed: 2, Ref: "feature", Score: 0.9}, 300, 5, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, r := range []*runfile.Run{full.Run(), seq} {
		path := filepath.Join(dir, r.Header.ID+".jsonl")
		if err := runfile.WriteFile(path, r); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	for _, format := range [][]string{nil, {"--markdown"}} {
		code, out, stderr := runBinary(t, dir, nil, append([]string{"compare", files[0], files[1], "--resamples", "200", "--fail-on", "never"}, format...)...)
		if code != 0 {
			t.Fatalf("compare %v: exit %d: %s", format, code, stderr)
		}
		// The headline table's header; its groups below are fixed-sample
		// bootstrap intervals at the comparison's own 95%.
		var head string
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(strings.ReplaceAll(line, "|", " ")); len(f) > 2 && f[0] == "Test" && f[1] == "Base" {
				head = line
			}
		}
		if !strings.Contains(head, "50% interval") || strings.Contains(head, "95%") {
			t.Errorf("compare %v: the headline's interval label %q in:\n%s", format, head, out)
		}
	}
	if code, _, stderr := runBinary(t, dir, nil, append([]string{"push", "--server", live.URL, "--token", live.Tokens[0]}, files...)...); code != 0 {
		t.Fatalf("push: exit %d: %s", code, stderr)
	}
	get := func(path string) string {
		resp, err := http.Get(live.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if page := get("/compare?base=main-full&head=pr-seq"); !strings.Contains(page, "50% interval of Δ") || strings.Contains(page, "95% interval of Δ") {
		t.Errorf("compare page: the headline's interval is labelled %q", servertest.Between(page, `<table`, "</thead>"))
	}
	if page := get("/runs/pr-seq"); !strings.Contains(page, "anytime-valid 50% interval") {
		t.Errorf("run page's sequential line: %q", servertest.Between(page, `id="sequential"`, "</dd>"))
	}
}
