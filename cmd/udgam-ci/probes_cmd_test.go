package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

func TestProbesGenerateCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e, out, _ := freshTestEnv()
	path := filepath.Join(dir, "core.jsonl")
	if code := run(e, []string{"probes", "generate", path}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../evals/probes/data/core-2026.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("probes generate with the defaults differs from the embedded core set")
	}
	if !strings.Contains(out.String(), "wrote 2000 items") {
		t.Errorf("stdout %q", out.String())
	}

	e, _, errb := freshTestEnv()
	if code := run(e, []string{"probes", "generate", filepath.Join(dir, "x.jsonl"), "--types", "nope"}); code != 1 || !strings.Contains(errb.String(), "nope") {
		t.Errorf("bad --types: exit %d, stderr %q", code, errb.String())
	}
	e, _, _ = freshTestEnv()
	if code := run(e, []string{"probes", "generate"}); code != 2 {
		t.Errorf("no output file: exit %d, want 2", code)
	}
}

// generateItems writes `probes generate --per per` into dir/items.jsonl.
func generateItems(t *testing.T, dir string, per int) string {
	t.Helper()
	items := filepath.Join(dir, "items.jsonl")
	e, _, errb := freshTestEnv()
	if code := run(e, []string{"probes", "generate", items, "--per", strconv.Itoa(per)}); code != 0 {
		t.Fatalf("probes generate: exit %d: %s", code, errb)
	}
	return items
}

func TestScoreProbesCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	items := generateItems(t, dir, 3)
	open := func(path string, threads int, _ bool) (runner.Model, error) {
		if path != "bigram.gguf" {
			t.Errorf("model path %q", path)
		}
		return testmodel.RandomBigram(4), nil
	}
	out := filepath.Join(dir, "run.jsonl")
	e, stdout, stderr := freshTestEnv()
	o := scoreProbesOptions{Model: "bigram.gguf", Items: items, Open: open}
	o.Run.Out, o.Run.BOSMode = out, "auto"
	o.JSON = true
	err := scoreProbes(e, o)
	if err != nil {
		t.Fatal(err)
	}
	var sum probes.Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout.String())
	}
	run, err := runfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Items != 63 || len(run.Items) != 63 || sum.Correct != runfile.SummarizeProbes(run.Items).Correct {
		t.Errorf("summary %d items %d correct; file %d records", sum.Items, sum.Correct, len(run.Items))
	}
	if run.Header.Git.Repo != "acme/lm" || run.Header.Git.PR == nil || *run.Header.Git.PR != 3 || run.Header.Dataset.Name != items {
		t.Errorf("header git %+v dataset %+v", run.Header.Git, run.Header.Dataset)
	}
	if !strings.Contains(stderr.String(), "progress:") {
		t.Errorf("no progress lines on stderr: %q", stderr.String())
	}

	// --resume on a finished run scores nothing and reports the same.
	e, stdout2, _ := freshTestEnv()
	o.JSON, o.Run.Resume = false, true
	err = scoreProbes(e, o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout2.String(), "probes: accuracy") {
		t.Errorf("text summary %q", stdout2.String())
	}
}

func TestScoreProbesUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string // in the message
	}{
		{[]string{"--out", "x.jsonl"}, "--model is required"},
		{[]string{"--model", "m.gguf"}, "--out is required"},
		{[]string{"--model", "m.gguf", "--out", "x.jsonl", "extra"}, `unexpected argument "extra"`},
		{[]string{"--model", "m.gguf", "--out", "x.jsonl", "--shard", "3/2"}, "-shard"},
		{[]string{"--model", "m.gguf", "--out", "x.jsonl", "--match", "a("}, "-match"},
		{[]string{"--model", "m.gguf", "--out", "x.jsonl", "--min-effect", "-1"}, "-min-effect"},
	} {
		e, _, stderr := freshTestEnv()
		args := append([]string{"score", "probes"}, tc.args...)
		if code := run(e, args); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q: %q", args, code, tc.want, stderr)
		}
	}
}

// The whole path through llama.cpp: the bigram model written as a GGUF and
// scored by the engine gives each choice the log-probability the closed
// form gives (float32 inside llama.cpp, hence 1e-4), and the same picks.
func TestScoreProbesLlamaMatchesBigram(t *testing.T) {
	t.Parallel()
	needEngine(t)
	dir := t.TempDir()
	bg := testmodel.RandomBigram(8)
	model := filepath.Join(dir, "bigram.gguf")
	if err := testmodel.WriteBigramGGUF(model, bg); err != nil {
		t.Fatal(err)
	}
	items, err := probes.Generate(probes.Options{Types: probes.TypesAll, Per: 4, Seed: 2026})
	if err != nil {
		t.Fatal(err)
	}
	itemsPath := filepath.Join(dir, "items.jsonl")
	if err := probes.WriteFile(itemsPath, items); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run.jsonl")
	e, _, _ := freshTestEnv()
	o := scoreProbesOptions{Model: model, Items: itemsPath, Open: openProbesLlama}
	o.Run.Out, o.Run.BOSMode = out, "auto"
	o.Threads = 2
	if err := scoreProbes(e, o); err != nil {
		t.Fatal(err)
	}
	run, err := runfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var ref []runfile.Item
	if err := probes.Score(context.Background(), bg, items, probes.ScoreOptions{AddBOS: true, BOS: testmodel.BOS}, func(r runfile.Item) error { ref = append(ref, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(run.Items) != len(ref) {
		t.Fatalf("%d records, want %d", len(run.Items), len(ref))
	}
	for i, got := range run.Items {
		for c := range got.Logprobs {
			if d := got.Logprobs[c] - ref[i].Logprobs[c]; d > 1e-4 || d < -1e-4 {
				t.Errorf("%s choice %d: llama.cpp %v, closed form %v", got.ID, c, got.Logprobs[c], ref[i].Logprobs[c])
			}
		}
		if got.Pred != ref[i].Pred || got.Tokens != ref[i].Tokens {
			t.Errorf("%s: llama.cpp picks %d (%d tokens), closed form %d (%d)", got.ID, got.Pred, got.Tokens, ref[i].Pred, ref[i].Tokens)
		}
	}
}

// The engine gets --threads, or all the machine's cores when it is 0; the
// run header keeps the flag as given (0: all cores).
func TestScoreThreadsDefaultToCores(t *testing.T) {
	t.Parallel()
	items := generateItems(t, t.TempDir(), 1)
	for _, tc := range []struct{ flag, cpus, want int }{{0, 3, 3}, {2, 3, 2}, {0, 1, 1}} {
		var got int
		open := func(_ string, threads int, _ bool) (runner.Model, error) {
			got = threads
			return testmodel.RandomBigram(4), nil
		}
		e, _, _ := freshTestEnv()
		e.CPUs = tc.cpus
		out := filepath.Join(t.TempDir(), "run.jsonl")
		o := scoreProbesOptions{Model: "bigram.gguf", Items: items, Open: open}
		o.Run.Out, o.Run.BOSMode = out, "auto"
		o.Threads = tc.flag
		if err := scoreProbes(e, o); err != nil {
			t.Fatal(err)
		}
		r, err := runfile.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want || r.Header.Runtime.Threads != tc.flag {
			t.Errorf("--threads %d on %d cores: engine got %d threads (want %d), header %d", tc.flag, tc.cpus, got, tc.want, r.Header.Runtime.Threads)
		}
	}
}

// A scoring option reaches the scorer from its flag alone (issue 41):
// --match, then --sample among the matches, scores only the matching
// items of the embedded core set.
func TestScoreProbesMatch(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "add.jsonl")
	o := newScoreProbesOptions()
	o.Open = func(string, int, bool) (runner.Model, error) { return testmodel.RandomBigram(3), nil }
	e, _, stderr := freshTestEnv()
	args := []string{"--model", "bigram.gguf", "--out", out, "--match", `^pea-add-[12]-`, "--sample", "6", "--seed", "4"}
	if err := parseScore(e, flag.NewFlagSet("score probes", flag.ContinueOnError), args, &o); err != nil {
		t.Fatal(err)
	}
	if err := scoreProbes(e, o); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	run, err := runfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	levels := map[int]int{}
	for _, it := range run.Items {
		if it.Type != "add" || !strings.HasPrefix(it.ID, "pea-add-") {
			t.Errorf("scored %s (%s), which --match leaves out", it.ID, it.Type)
		}
		levels[it.Level]++
	}
	if len(run.Items) != 6 || levels[1] != 3 || levels[2] != 3 {
		t.Errorf("scored %d items, by level %v: want 6, three of each matching level", len(run.Items), levels)
	}
	if s := run.Header.Sample; s == nil || s.N != 6 || s.Seed != 4 || len(s.IDs) != 6 {
		t.Errorf("header sample %+v", s)
	}
}
