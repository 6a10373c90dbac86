package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFreshBuildCommand(t *testing.T) {
	t.Parallel()
	feed, err := os.ReadFile("../../evals/fresh/build/testdata/arxiv/feed-0.xml")
	if err != nil {
		t.Fatal(err)
	}
	var ua, query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua, query = r.Header.Get("User-Agent"), r.URL.Query().Get("search_query")
		w.Write(feed)
	}))
	defer srv.Close()
	newEnv := func() (*env, *bytes.Buffer, *bytes.Buffer) {
		var out, errb bytes.Buffer
		return &env{Ctx: context.Background(), Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv: func(string) string { return "" },
			Now:    func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }, CPUs: testCPUs}, &out, &errb
	}

	out := filepath.Join(t.TempDir(), "fresh.jsonl")
	e, stdout, stderr := newEnv()
	code := run(e, []string{"fresh", "build", out, "--since", "2026-09-01", "--until", "2026-10-01",
		"--wikipedia", "0", "--arxiv", "1", "--arxiv-api", srv.URL, "--contact", "ci@example.org"})
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if !strings.Contains(ua, "ci@example.org") || query != "submittedDate:[202609010000 TO 202609302359]" {
		t.Errorf("User-Agent %q, query %q", ua, query)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var row map[string]string
	if err := json.Unmarshal(b, &row); err != nil || strings.Count(string(b), "\n") != 1 {
		t.Fatalf("output %q: %v", b, err)
	}
	if row["source"] != "arxiv" || row["license"] != "CC0 1.0" || !strings.HasPrefix(row["credit"], "arXiv:") || row["text"] == "" {
		t.Errorf("row %v", row)
	}
	if !strings.Contains(stdout.String(), "wrote 1 documents to "+out) {
		t.Errorf("stdout %q", stdout.String())
	}

	for _, args := range [][]string{
		{"fresh", "build", out},                                          // no --since
		{"fresh", "build", "--since", "2026-09-01"},                      // no output
		{"fresh", "build", out, "--since", "1 September"},                // bad date
		{"fresh", "build", out, "--since", "2026-09-01", "--until", "x"}, // bad date
	} {
		e, _, _ := newEnv()
		if code := run(e, args); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	e, _, stderr = newEnv()
	if code := run(e, []string{"fresh", "build", out, "--since", "2026-09-01", "--wikipedia", "0", "--arxiv", "0"}); code != 1 || !strings.Contains(stderr.String(), "ask for some documents") {
		t.Errorf("nothing asked: exit %d, stderr %q", code, stderr.String())
	}
}
