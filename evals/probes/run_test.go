package probes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
)

func testSet(t *testing.T, per int) *Set {
	t.Helper()
	return &Set{Name: "test items", SHA256: "abc", Items: generate(t, Options{Types: TypesCore, Per: per, Seed: 2026})}
}

func runOpts(out string, set *Set) RunOptions {
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return RunOptions{
		RunCommon: evals.RunCommon{
			Out: out, BOSMode: evals.BOSAuto,
			Header: evals.HeaderOptions{ModelName: "bigram", Rand: strings.NewReader(strings.Repeat("r", 64))},
			Now:    func() time.Time { return clock },
		},
		Data: set, Batch: 8,
	}
}

func TestRunWritesRecordsAndHeader(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "run.jsonl")
	set := testSet(t, 5)
	m := testmodel.RandomBigram(3)
	res, err := Run(context.Background(), m, runOpts(out, set))
	if err != nil {
		t.Fatal(err)
	}
	run, err := runfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	h := run.Header
	if h.Test != runfile.TestProbes || h.Settings.Formulation != Formulation || !h.Settings.AddBOS || h.Settings.BOSID != testmodel.BOS || h.Settings.BOSMode != "auto" {
		t.Errorf("header settings %+v", h.Settings)
	}
	if !reflect.DeepEqual(h.Dataset, set.Dataset()) || h.Dataset.Count != len(set.Items) {
		t.Errorf("header dataset %+v, want %+v", h.Dataset, set.Dataset())
	}
	want := scoreAll(t, m, ScoreOptions{AddBOS: true, BOS: testmodel.BOS}, set.Items)
	if !reflect.DeepEqual(run.Items, want) {
		t.Error("records in the file differ from scoring the items directly")
	}
	if res.Summary.Items != len(set.Items) || res.Summary.Correct != runfile.SummarizeProbes(want).Correct || res.Summary.Settings != h.Settings || res.Summary.Run != h.ID {
		t.Errorf("summary %+v", res.Summary)
	}
	// A second run into the same file is refused, not appended.
	if _, err := Run(context.Background(), m, runOpts(out, set)); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("rerun into an existing file: %v", err)
	}
}

func TestRunResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set := testSet(t, 5) // 105 items, 14 calls of 8
	m := testmodel.RandomBigram(3)

	whole := filepath.Join(dir, "whole.jsonl")
	if _, err := Run(context.Background(), m, runOpts(whole, set)); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "run.jsonl")
	broken := &recorder{Model: m, fail: 4}
	if _, err := Run(context.Background(), broken, runOpts(out, set)); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("failing engine: err %v", err)
	}
	partial, err := runfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(partial.Items) != 24 {
		t.Fatalf("%d records after three good calls of 8, want 24", len(partial.Items))
	}

	again := &recorder{Model: m}
	opt := runOpts(out, set)
	opt.Resume = true
	var progress strings.Builder
	opt.Progress = &progress
	res, err := Run(context.Background(), again, opt)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("resuming %s: 24 items already scored, %d to go", out, len(set.Items)-24); !strings.Contains(progress.String(), want) {
		t.Errorf("progress %q lacks %q", progress.String(), want)
	}
	if again.items() != len(set.Items)-24 {
		t.Errorf("resume scored %d items, want the %d left", again.items(), len(set.Items)-24)
	}
	a, _ := runfile.ReadFile(whole)
	b, err := runfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Items, b.Items) {
		t.Error("a resumed run's records differ from an uninterrupted run's")
	}
	if res.Summary.Items != len(set.Items) {
		t.Errorf("summary counts %d items, want all %d", res.Summary.Items, len(set.Items))
	}
}

func TestRunSampleAndShard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set := testSet(t, 10)
	m := testmodel.RandomBigram(3)

	opt := runOpts(filepath.Join(dir, "sample.jsonl"), set)
	opt.Selection.Sample, opt.Selection.Seed = 42, 9
	if _, err := Run(context.Background(), m, opt); err != nil {
		t.Fatal(err)
	}
	run, err := runfile.ReadFile(opt.Out)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Items) != 42 || run.Header.Sample == nil || run.Header.Sample.N != 42 || len(run.Header.Sample.IDs) != 42 {
		t.Fatalf("sample run: %d records, header sample %+v", len(run.Items), run.Header.Sample)
	}
	perLevel := map[string]int{}
	for _, it := range run.Items {
		perLevel[runfile.LevelKey(it.Type, it.Level)]++
	}
	for k, n := range perLevel {
		if n != 2 { // 42 items over 21 levels of 10
			t.Errorf("level %s has %d sampled items, want 2 (stratified)", k, n)
		}
	}

	whole := runOpts(filepath.Join(dir, "whole.jsonl"), set)
	wholeRes, err := Run(context.Background(), m, whole)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	var shards []*runfile.Run
	for i := 1; i <= 3; i++ {
		opt := runOpts(filepath.Join(dir, "shard.jsonl"+string(rune('0'+i))), set)
		opt.Selection.Shard = &runfile.Shard{Index: i, Count: 3}
		if _, err := Run(context.Background(), m, opt); err != nil {
			t.Fatal(err)
		}
		run, err := runfile.ReadFile(opt.Out)
		if err != nil {
			t.Fatal(err)
		}
		if *run.Header.Shard != *opt.Selection.Shard {
			t.Errorf("shard header %+v", run.Header.Shard)
		}
		for _, it := range run.Items {
			seen[it.ID]++
		}
		shards = append(shards, run)
	}
	// udgam-ci merge joins the shards into the same score as one whole run.
	merged, err := evals.Merge(shards)
	if err != nil {
		t.Fatal(err)
	}
	if got := Summarize(merged.Header, merged.Items, 0); got.Correct != wholeRes.Summary.Correct || got.Items != wholeRes.Summary.Items || got.AccNorm != wholeRes.Summary.AccNorm {
		t.Errorf("merged shards: %d/%d correct, whole run %d/%d", got.Correct, got.Items, wholeRes.Summary.Correct, wholeRes.Summary.Items)
	}
	if len(seen) != len(set.Items) {
		t.Errorf("shards cover %d items, want %d", len(seen), len(set.Items))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s scored by %d shards", id, n)
		}
	}
}

func TestSummaryOutput(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "run.jsonl")
	res, err := Run(context.Background(), testmodel.RandomBigram(3), runOpts(out, testSet(t, 2)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"test", "accuracy", "correct", "items", "by_type", "settings", "seconds", "by_level", "chance", "ties", "acc_norm"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("--json object has no %q: %s", k, b)
		}
	}
	if obj["test"] != "probes" || obj["items"] != float64(42) {
		t.Errorf("json %s", b)
	}
	var text bytes.Buffer
	if err := res.Summary.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"probes: accuracy", "mul/1", "syllogism", "chance"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, text.String())
		}
	}
}

func TestAccNorm(t *testing.T) {
	t.Parallel()
	items := []runfile.Item{
		{Logprobs: []float64{-1, -2}, Norm: []float64{-0.5, -0.1}, Answer: 1},
		{Logprobs: []float64{-1, -2}, Norm: []float64{-0.5, -0.6}, Answer: 1},
		{Logprobs: []float64{-1, -2}, Answer: 0}, // no per-byte scores: wrong
		{Logprobs: []float64{-3, -2}, Norm: []float64{-0.1, -0.2}, Answer: 0},
	}
	if got := AccNorm(items); got != 50 {
		t.Errorf("AccNorm = %v, want 50", got)
	}
}
