package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// The command line refuses numbers out of range, naming the flag, and
// says the same thing the same way everywhere.
func TestCommandLineChecks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	items := filepath.Join(dir, "items.jsonl")
	os.WriteFile(items, []byte("x"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"score", "fresh", "--model", "m.gguf", "--out", "o.jsonl", "--threads", "-1"}, 2, "--threads -1: want 0 or more"},
		{[]string{"score", "fresh", "--model", "m.gguf", "--out", "o.jsonl", "--limit", "-3"}, 2, "--limit -3: want 0 or more"},
		{[]string{"score", "probes", "--model", "m.gguf", "--out", "o.jsonl", "--limit", "-1"}, 2, "--limit -1: want 0 or more"},
		{[]string{"score", "probes", "--model", "m.gguf", "--out", "o.jsonl", "--batch", "0"}, 2, "--batch 0: want 1 or more"},
		{[]string{"score", "fresh", "--model", "m.gguf", "--out", "o.jsonl", "--data", empty}, 1, "empty.jsonl: no documents"},
		{[]string{"probes", "generate", items}, 1, "items.jsonl exists (use --force to overwrite it)"},
		{[]string{"probes", "generate", items + "2", "--per", "0"}, 2, "--per 0: want 1 or more"},
		{[]string{"compare", "a.jsonl"}, 2, "got 1 argument"},
		{[]string{"score", "fresh", "--help"}, 0, "  --model string"},
	} {
		e, stdout, stderr := freshTestEnv()
		code := run(e, tc.args)
		if code != tc.code || !strings.Contains(stderr.String()+stdout.String(), tc.msg) {
			t.Errorf("%v: exit %d, output %q; want %d and %q", tc.args, code, stderr.String()+stdout.String(), tc.code, tc.msg)
		}
		if strings.Contains(stderr.String(), "merge: merge:") || strings.Contains(stderr.String(), "push: push:") {
			t.Errorf("%v stutters: %q", tc.args, stderr)
		}
	}
	e, stdout, _ := freshTestEnv()
	if code := run(e, []string{"--version"}); code != 0 || !strings.HasPrefix(stdout.String(), "udgam-ci ") {
		t.Errorf("--version: exit %d, %q", code, stdout)
	}
}

func TestScoreFlagsClampThreads(t *testing.T) {
	t.Parallel()
	e, _, stderr := freshTestEnv()
	e.Getenv = func(string) string { return "" }
	e.CPUs = 4
	r := scoreFlags{Threads: 999}
	if err := r.check(e, nil, "m.gguf", "o.jsonl"); err != nil {
		t.Fatal(err)
	}
	if r.Threads != 4 || !strings.Contains(stderr.String(), "--threads 999: this machine has 4 cores; using 4") {
		t.Errorf("threads %d, stderr %q", r.Threads, stderr)
	}
	e, _, stderr = freshTestEnv()
	r = scoreFlags{}
	if err := r.check(e, nil, "m.gguf", "o.jsonl"); err != nil || stderr.Len() != 0 {
		t.Errorf("checked flags: %v, %q", err, stderr)
	}
}

// A build's CPU target (make variants, make build) is named by version and
// recorded in the run header as a runtime fact.
func TestCPUTargetInVersionAndHeader(t *testing.T) {
	t.Parallel()
	e, stdout, _ := freshTestEnv()
	e.CPUVariant = "x86-64-v3"
	if code := run(e, []string{"version"}); code != 0 || !strings.Contains(stdout.String(), "\nengine CPU target: x86-64-v3\n") {
		t.Errorf("version: exit %d, %q", code, stdout)
	}
	r := scoreFlags{Threads: 2}
	if c, err := r.common(e, runfile.TestFresh, runfile.Dataset{}); err != nil || c.Header.Runtime.CPU != "x86-64-v3" || c.Header.Runtime.Threads != 2 {
		t.Errorf("header runtime %+v, %v", c.Header.Runtime, err)
	}
}
