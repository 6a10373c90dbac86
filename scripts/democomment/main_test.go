package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
)

// scoreBoth scores a pure-Go model on the smoke sample and the core set,
// as the demo does with llama.cpp, and returns the two run files.
func scoreBoth(t *testing.T, m runner.Model, name string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	smoke, err := fresh.Smoke()
	if err != nil {
		t.Fatal(err)
	}
	head := evals.HeaderOptions{ModelName: "demo-bigram", ModelRevision: name}
	freshOut := filepath.Join(dir, "fresh-"+name+".jsonl")
	if _, err := fresh.Run(ctx, m, fresh.RunOptions{RunCommon: evals.RunCommon{Out: freshOut, Header: head}, Data: smoke, Window: fresh.DefaultWindow, Stride: fresh.DefaultStride}); err != nil {
		t.Fatal(err)
	}
	core, err := probes.Core()
	if err != nil {
		t.Fatal(err)
	}
	probesOut := filepath.Join(dir, "probes-"+name+".jsonl")
	if _, err := probes.Run(ctx, m, probes.RunOptions{RunCommon: evals.RunCommon{Out: probesOut, Header: head}, Data: core}); err != nil {
		t.Fatal(err)
	}
	return freshOut, probesOut
}

func TestRunWritesTheActionsComment(t *testing.T) {
	t.Parallel()
	text := []byte(strings.Repeat("The quick brown fox jumps over the lazy dog. Question: What is 2 + 2?\nAnswer: 4\n\n", 50))
	fitted, err := testmodel.FitBigram(text, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	baseFresh, baseProbes := scoreBoth(t, testmodel.RandomBigram(1), "baseline")
	headFresh, headProbes := scoreBoth(t, fitted, "candidate")

	out := filepath.Join(t.TempDir(), "comment.md")
	if err := run("demo-bigram", out, []string{baseFresh, headFresh, baseProbes, headProbes}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	if first, _, _ := strings.Cut(body, "\n"); first != "<!-- udgam-ci: model=demo-bigram -->" {
		t.Errorf("first line %q, want the hidden marker", first)
	}
	// One headline row per test, in the order given, each with an interval,
	// and the Probe Suite's byte-normalised margin under its accuracy.
	rows := regexp.MustCompile(`(?m)^\| (Fresh Text \(bits|Probe Suite \(accuracy|Probe Suite \(margin).*\| \[[-+][0-9.]+, [-+][0-9.]+\] \|`).FindAllStringSubmatch(body, -1)
	if len(rows) != 3 || rows[0][1] != "Fresh Text (bits" || rows[1][1] != "Probe Suite (accuracy" || rows[2][1] != "Probe Suite (margin" {
		t.Errorf("headline rows %v, want Fresh Text then Probe Suite with intervals; comment:\n%s", rows, body)
	}
	// The Action's inputs, not compare's flags: seed 0, 1.0 point minimum.
	if !strings.Contains(body, "4,000 resamples (seed 0)") || !strings.Contains(body, "0.002 bpb / 1.0 point") {
		t.Errorf("comment does not state the Action's default options:\n%s", body)
	}
}

func TestRunNamesAMissingRunFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.jsonl")
	out := filepath.Join(dir, "comment.md")
	err := run("demo-bigram", out, []string{missing, missing})
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("error %v, want one naming %s", err, missing)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a comment was written despite the error (stat: %v)", err)
	}
}
