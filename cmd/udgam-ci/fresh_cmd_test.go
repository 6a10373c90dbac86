package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// testCPUs is the cores a test's commands see: one engine thread each,
// since tests run side by side and ggml's waiting threads spin, so two
// threads per test on a 2-core machine spend much of their time spinning.
const testCPUs = 1

func freshTestEnv() (*env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &env{
		Ctx: context.Background(), Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string {
			return map[string]string{"GITHUB_REPOSITORY": "acme/lm", "GITHUB_REF": "refs/pull/3/merge"}[k]
		},
		Now:  func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) },
		CPUs: testCPUs,
	}, &out, &errb
}

func writeDocs(t *testing.T, dir string, docs []fresh.Document) string {
	t.Helper()
	var b bytes.Buffer
	for _, d := range docs {
		line, _ := json.Marshal(d)
		b.Write(append(line, '\n'))
	}
	p := filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestScoreFreshThroughLlama scores a bigram model written as GGUF through
// llama.cpp and checks the command's bpb against the bigram arithmetic,
// with and without BOS, then shards the run and merges the shards.
func TestScoreFreshThroughLlama(t *testing.T) {
	t.Parallel()
	needEngine(t)
	dir := t.TempDir()
	model := testmodel.RandomBigram(8)
	gguf := filepath.Join(dir, "bigram.gguf")
	if err := testmodel.WriteBigramGGUF(gguf, model); err != nil {
		t.Fatal(err)
	}
	docs := fresh.GenerateDocs(3, 6, 200, 900)
	docs[0].Text = "Grüße aus München — 東京 and more text " + docs[0].Text
	data := writeDocs(t, dir, docs)

	for _, bos := range []string{"yes", "no"} {
		out := filepath.Join(dir, "run-"+bos+".jsonl")
		e, stdout, stderr := freshTestEnv()
		code := run(e, []string{"score", "fresh", "--model", gguf, "--data", data, "--out", out, "--add-bos", bos,
			"--window", "64", "--stride", "32", "--threads", "1", "--json"})
		if code != 0 {
			t.Fatalf("--add-bos %s: exit %d: %s", bos, code, stderr.String())
		}
		var sum fresh.Summary
		if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
			t.Fatalf("--json output %q: %v", stdout.String(), err)
		}
		var bits float64
		var nbytes int
		for _, d := range docs {
			prev, start := testmodel.BOS, 0
			if bos == "no" {
				prev, start = int32(d.Text[0]), 1
			}
			for i := start; i < len(d.Text); i++ {
				bits -= model.LogProb(prev, int32(d.Text[i])) / math.Ln2
				prev = int32(d.Text[i])
			}
			nbytes += len(d.Text) - start
		}
		want := bits / float64(nbytes)
		// llama.cpp computes in float32.
		if math.Abs(sum.BPB-want)/want > 1e-6 || sum.Bytes != nbytes || sum.Docs != len(docs) || sum.Test != "fresh" {
			t.Errorf("--add-bos %s: bpb %.9f bytes %d docs %d, want bpb %.9f bytes %d", bos, sum.BPB, sum.Bytes, sum.Docs, want, nbytes)
		}
		run, err := runfile.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if run.Header.Git.Repo != "acme/lm" || run.Header.Git.PR == nil || *run.Header.Git.PR != 3 || run.Header.Settings.AddBOS != (bos == "yes") || run.Header.Model.SHA256 == "" {
			t.Errorf("header %+v", run.Header)
		}
	}

	// Shards, then merge.
	var shards []string
	for i := 1; i <= 2; i++ {
		out := filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
		e, _, stderr := freshTestEnv()
		if code := run(e, []string{"score", "fresh", "--model", gguf, "--data", data, "--out", out, "--window", "64", "--stride", "32",
			"--threads", "1", "--shard", fmt.Sprintf("%d/2", i)}); code != 0 {
			t.Fatalf("shard %d: exit %d: %s", i, code, stderr.String())
		}
		shards = append(shards, out)
	}
	merged := filepath.Join(dir, "merged.jsonl")
	e, stdout, stderr := freshTestEnv()
	if code := run(e, append([]string{"merge", merged}, shards...)); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "merged 2 shards, 6 records") {
		t.Errorf("merge said %q", stdout.String())
	}
	m, err := runfile.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := runfile.ReadFile(filepath.Join(dir, "run-yes.jsonl"))
	a, b := runfile.SummarizeFresh(m.Docs), runfile.SummarizeFresh(whole.Docs)
	if a.Docs != b.Docs || a.Bytes != b.Bytes || math.Abs(a.BPB-b.BPB) > 1e-12*b.BPB {
		t.Errorf("merged shards %+v, whole run %+v", a.FreshGroup, b.FreshGroup)
	}
	// Merging again without --force, or with a shard missing, is refused.
	e, _, stderr = freshTestEnv()
	if code := run(e, append([]string{"merge", merged}, shards...)); code != 1 || !strings.Contains(stderr.String(), "--force") {
		t.Errorf("merge over an existing file: exit %d, %q", code, stderr.String())
	}
	e, _, stderr = freshTestEnv()
	if code := run(e, []string{"merge", filepath.Join(dir, "m2.jsonl"), shards[0]}); code != 1 || !strings.Contains(stderr.String(), "missing shard(s) [2] of 2") || !strings.Contains(stderr.String(), "shard-1.jsonl: run ") {
		t.Errorf("merge with a shard missing: exit %d, %q", code, stderr.String())
	}
}

func TestScoreFreshCommandErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id":"a","text":"x"}`+"\n"+`{"id":"a","text":"y"}`+"\n"), 0o644)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no model", []string{"--out", "x.jsonl"}, 2, "--model is required"},
		{"no out", []string{"--model", "m.gguf"}, 2, "--out is required"},
		{"bad shard", []string{"--model", "m.gguf", "--out", filepath.Join(dir, "o.jsonl"), "--shard", "3/2"}, 2, `shard "3/2"`},
		{"bad data, before the model", []string{"--model", "missing.gguf", "--out", filepath.Join(dir, "o.jsonl"), "--data", bad}, 1, `bad.jsonl line 2: duplicate id "a"`},
		{"missing model", []string{"--model", filepath.Join(dir, "missing.gguf"), "--out", filepath.Join(dir, "o.jsonl")}, 1, "missing.gguf"},
		{"stray argument", []string{"--model", "m.gguf", "--out", "o.jsonl", "extra"}, 2, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _, stderr := freshTestEnv()
			if code := run(e, append([]string{"score", "fresh"}, tt.args...)); code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), tt.code, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "o.jsonl")); err == nil {
		t.Error("a failed command left a run file")
	}
	e, _, _ := freshTestEnv()
	if code := run(e, []string{"merge", "only-out.jsonl"}); code != 2 {
		t.Errorf("merge with no shards: exit %d, want 2", code)
	}
}
