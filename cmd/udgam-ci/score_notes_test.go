package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
)

// What the score commands say around a run, as the binary prints it
// (issue 32): a --sample larger than the data and the items --exclude left
// out are said before scoring and in the summary; the note about a missing
// --git-repo comes once, as scoring starts, never before an error.
func TestScoreSaysWhatItScores(t *testing.T) {
	needEngine(t) // it scores
	t.Parallel()
	dir := t.TempDir()
	gguf := filepath.Join(dir, "bigram.gguf")
	if err := testmodel.WriteBigramGGUF(gguf, testmodel.RandomBigram(8)); err != nil {
		t.Fatal(err)
	}
	noRepo := []string{"GITHUB_REPOSITORY=", "GITHUB_REF=", "GITHUB_SHA="}
	const repoNote = "note: no --git-repo"

	// The embedded smoke sample holds 30 documents.
	code, stdout, stderr := runBinary(t, dir, noRepo, "score", "fresh", "--model", gguf, "--sample", "1000", "--out", "fresh.jsonl",
		"--window", "64", "--stride", "32", "--threads", "1")
	const sampleNote = "--sample 1000: the data hold 30 documents, so the sample is all 30"
	if code != 0 || !strings.Contains(stderr, "note: "+sampleNote) || !strings.Contains(stdout, sampleNote) {
		t.Errorf("--sample over the data: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if n := strings.Count(stderr, repoNote); n != 1 {
		t.Errorf("a run without a repository is told %d times:\n%s", n, stderr)
	}

	// Errors in the flags, data or model come alone.
	os.WriteFile(filepath.Join(dir, "empty.jsonl"), nil, 0o644)
	for _, args := range [][]string{
		{"score", "fresh", "--model", gguf, "--data", "empty.jsonl", "--out", "x.jsonl"},
		{"score", "probes", "--model", "missing.gguf", "--out", "y.jsonl"},
		{"score", "fresh", "--model", gguf, "--out", "z.jsonl", "--threads", "-1"},
	} {
		code, _, stderr := runBinary(t, dir, noRepo, args...)
		if code == 0 || strings.Contains(stderr, repoNote) {
			t.Errorf("%v: exit %d, stderr:\n%s", args, code, stderr)
		}
	}

	// --exclude: the summary says why fewer items were scored.
	if code, _, stderr := runBinary(t, dir, nil, "probes", "generate", "items.jsonl", "--per", "2"); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, stderr)
	}
	set, err := probes.LoadFile(filepath.Join(dir, "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	leaked := set.Items[3]
	os.WriteFile(filepath.Join(dir, "train.txt"), []byte(leaked.Prompt+" "+leaked.Answer+"\n"), 0o644)
	if code, _, stderr := runBinary(t, dir, nil, "contamination", "scan", "--train", "train.txt", "--tests", "probes", "--items", "items.jsonl", "--out", "scan.json"); code != 0 {
		t.Fatalf("scan: exit %d: %s", code, stderr)
	}
	code, stdout, stderr = runBinary(t, dir, []string{"GITHUB_REPOSITORY=acme/lm"}, "score", "probes", "--model", gguf, "--items", "items.jsonl",
		"--exclude", "scan.json", "--out", "probes.jsonl", "--threads", "1")
	excludeNote := "--exclude scan.json: 1 of the " + strconv.Itoa(len(set.Items)) + " items it checked were found in the training data and are not scored"
	if code != 0 || !strings.Contains(stdout, excludeNote) || !strings.Contains(stderr, excludeNote) || strings.Contains(stderr, repoNote) {
		t.Errorf("--exclude: exit %d\nstdout:\n%s\nstderr:\n%s\nwant %q", code, stdout, stderr, excludeNote)
	}
}
