package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/action/actiontest"
	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/hub/hubtest"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

func actionTestEnv(vars map[string]string) (*env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &env{
		Ctx: context.Background(), Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return vars[k] },
		Now:    func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) },
		CPUs:   testCPUs,
	}, &out, &errb
}

func TestModelFetchCommand(t *testing.T) {
	t.Parallel()
	const sha = "3333333333333333333333333333333333333333"
	fh := hubtest.New(t)
	src := t.TempDir()
	if _, err := converttest.Small.Write(src); err != nil {
		t.Fatal(err)
	}
	if err := fh.AddDir("acme/tiny", sha, src); err != nil {
		t.Fatal(err)
	}
	e, stdout, stderr := actionTestEnv(map[string]string{"HF_ENDPOINT": fh.URL, "UDGAM_CI_CACHE": t.TempDir()})
	out := filepath.Join(t.TempDir(), "m.gguf")
	if code := run(e, []string{"model", "fetch", "acme/tiny", "--revision", sha, "--dtype", "bf16", "--out", out}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	info, err := runner.ReadInfo(out)
	if err != nil {
		t.Fatal(err)
	}
	if info.Arch != "llama" || !strings.Contains(stdout.String(), info.SHA256) || !strings.Contains(stdout.String(), "converted from safetensors") {
		t.Errorf("info %+v, stdout %q", info, stdout)
	}

	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"model", "fetch", "acme/tiny", "--out", out}, 2, "--revision is required"},
		{[]string{"model", "fetch", "acme/tiny", "--revision", "main", "--out", out}, 1, "not a 40-hex commit sha"},
		{[]string{"model", "fetch", "--revision", sha, "--out", out}, 2, "give one repository"},
	}
	for _, tt := range tests {
		e, _, stderr := actionTestEnv(map[string]string{"HF_ENDPOINT": fh.URL, "UDGAM_CI_CACHE": t.TempDir()})
		if code := run(e, tt.args); code != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}

func TestActionCommandRejectsBadInputs(t *testing.T) {
	t.Parallel()
	e, stdout, stderr := actionTestEnv(map[string]string{"INPUT_MODEL": "acme/tiny", "INPUT_REVISION": "v1.0", "INPUT_GITHUB-TOKEN": "ghs_x"})
	if code := run(e, []string{"action"}); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if !strings.HasPrefix(stdout.String(), "::add-mask::ghs_x\n") || !strings.Contains(stdout.String(), "::error title=udgam-ci%3A invalid inputs::") {
		t.Errorf("stdout %q", stdout)
	}
	if !strings.Contains(stderr.String(), `input revision: "v1.0" is not a 40-hex commit sha`) {
		t.Errorf("stderr %q", stderr)
	}
}

// TestActionScoresSafetensorsWithLlama runs `udgam-ci action` for real: a
// safetensors checkpoint is converted, scored by llama.cpp on a few
// documents, recorded as main's baseline, then compared with itself on a
// pull request, which finds the model unchanged and gets its verdict with
// no scoring: its records are the baseline's, which the test alters first
// so that scoring again would show, and its comment says so.
func TestActionScoresSafetensorsWithLlama(t *testing.T) {
	t.Parallel()
	needEngine(t)
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ckpt")
	if _, err := converttest.Small.Write(ckpt); err != nil {
		t.Fatal(err)
	}
	var docs strings.Builder
	for i := range 12 {
		fmt.Fprintf(&docs, "{\"id\":\"d%02d\",\"text\":\"Document %d: the quick brown fox jumps over the lazy dog %d times.\"}\n", i, i, i*7)
	}
	data := filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(data, []byte(docs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	event := func(name, payload string) map[string]string {
		p := filepath.Join(t.TempDir(), "event.json")
		if err := os.WriteFile(p, []byte(payload), 0o644); err != nil {
			t.Fatal(err)
		}
		return map[string]string{
			"GITHUB_EVENT_NAME": name, "GITHUB_EVENT_PATH": p, "GITHUB_REPOSITORY": "acme/train",
			"INPUT_MODEL": ckpt, "INPUT_MODEL-NAME": "acme/tiny", "INPUT_TESTS": "fresh", "INPUT_FRESH-DATA": data,
			"INPUT_THREADS": "2", "INPUT_WINDOW": "64", "INPUT_STRIDE": "32", "INPUT_CACHE-DIR": filepath.Join(dir, "cache"),
			"INPUT_WORK-DIR": filepath.Join(t.TempDir(), "runs"), "INPUT_COMMENT": "false", "INPUT_RESAMPLES": "200",
		}
	}

	vars := event("push", `{"ref":"refs/heads/main","repository":{"full_name":"acme/train","default_branch":"main"}}`)
	vars["INPUT_BASELINE"] = "none"
	e, stdout, stderr := actionTestEnv(vars)
	if code := run(e, []string{"action"}); code != 0 {
		t.Fatalf("push: exit %d\n%s\n%s", code, stdout, stderr)
	}
	base := filepath.Join(vars["INPUT_WORK-DIR"], "fresh-head.jsonl")
	run1, err := runfile.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	if c := run1.Header.Model.Conversion; c == nil || c.From != "safetensors" || run1.Len() != 12 {
		t.Fatalf("run header model %+v, %d records", run1.Header.Model, run1.Len())
	}

	run1.Docs[3].Bits += 2
	if err := runfile.WriteFile(base, run1); err != nil {
		t.Fatal(err)
	}
	gh := actiontest.NewGitHub(t, "acme/train", "ghs_test")
	vars = event("pull_request", `{"pull_request":{"number":4,"head":{"ref":"feat","sha":"`+strings.Repeat("c", 40)+`"},"base":{"ref":"main"}},"repository":{"full_name":"acme/train"}}`)
	vars["INPUT_BASELINE"] = base
	vars["INPUT_COMMENT"], vars["INPUT_GITHUB-TOKEN"], vars["GITHUB_API_URL"] = "true", "ghs_test", gh.APIURL()
	e, stdout, stderr = actionTestEnv(vars)
	if code := run(e, []string{"action"}); code != 0 {
		t.Fatalf("pr: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout.String(), "output fresh-verdict=no change") || !strings.Contains(stdout.String(), "output fresh-delta=0.0000") {
		t.Errorf("the same model scored twice should not change:\n%s", stdout)
	}
	head, err := runfile.ReadFile(filepath.Join(vars["INPUT_WORK-DIR"], "fresh-head.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	line := "unchanged model: records reused from run " + run1.Header.ID + ", no scoring"
	if r := head.Header.Reused; r == nil || r.From != run1.Header.ID || !reflect.DeepEqual(byID(head.Docs), byID(run1.Docs)) {
		t.Fatalf("pr: header reused %+v; its records must be the baseline's, altered ones too", head.Header.Reused)
	}
	if cs := gh.Comments(4); len(cs) != 1 || !strings.Contains(cs[0].Body, line) || !strings.Contains(stdout.String(), line) {
		t.Errorf("pr: the comment and the log must say %q; log:\n%s\ncomments %+v", line, stdout, cs)
	}
}

// TestConvertedTokenizerInLlama loads a converted checkpoint in llama.cpp
// and checks its tokenizer: byte-level BPE merges apply, and digits split
// one by one (the "smollm" pre-tokenizer; ollama's "default" would merge
// "10" into one token).
func TestConvertedTokenizerInLlama(t *testing.T) {
	t.Parallel()
	needEngine(t)
	dir := t.TempDir()
	tied := converttest.Small
	tied.Tied = true // SmolLM2 ties the output layer to the embedding
	if _, err := tied.Write(filepath.Join(dir, "ckpt")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "m.gguf")
	if _, err := convert.Dir(filepath.Join(dir, "ckpt"), out, convert.Options{Dtype: "f32"}); err != nil {
		t.Fatal(err)
	}
	m, err := loadEngine(out, engineOptions{Threads: 1, Context: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const the, eot = 257, int32(converttest.Vocab - 1)
	tests := []struct {
		text string
		want []int32
	}{
		{"the", []int32{the}},
		{" the", []int32{' ', the}},
		{"10", []int32{'1', '0'}},
		{"a1", []int32{'a', '1'}},
	}
	for _, tt := range tests {
		got, err := m.Tokenize(tt.text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Tokenize(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
	if info := m.Info(); info.BOS != eot || info.VocabSize != converttest.Vocab {
		t.Errorf("info: bos %d, vocab %d", info.BOS, info.VocabSize)
	}
	// The tied model scores: finite log-probabilities that sum to at most 0.
	res, err := m.Score(context.Background(), []runner.Request{{Branches: []runner.Branch{{Tokens: []int32{eot, the, ' ', the}, Positions: []int{1, 2, 3}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, lp := range res[0][0] {
		if math.IsNaN(lp) || math.IsInf(lp, 0) || lp > 0 {
			t.Errorf("log-probabilities %v", res[0][0])
		}
	}
}
