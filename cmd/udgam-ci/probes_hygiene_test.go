package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Through llama.cpp and the command line: --variants scores the prompt
// variants after the published items, whose records stay exactly those of
// a plain run; the summary and `compare` (text and --json) give the
// byte-normalised margin and the variants' spread (issue 28).
func TestScoreProbesVariantsAndMargin(t *testing.T) {
	t.Parallel()
	needEngine(t) // it scores
	dir := t.TempDir()
	items, err := probes.Generate(probes.Options{Types: probes.TypesCore, Per: 3, Seed: 2026})
	if err != nil {
		t.Fatal(err)
	}
	itemsPath := filepath.Join(dir, "items.jsonl")
	if err := probes.WriteFile(itemsPath, items); err != nil {
		t.Fatal(err)
	}
	score := func(seed int64, out string, extra ...string) (probes.Summary, *runfile.Run) {
		t.Helper()
		model := filepath.Join(dir, "bigram"+string(rune('0'+seed))+".gguf")
		if _, err := os.Stat(model); err != nil {
			if err := testmodel.WriteBigramGGUF(model, testmodel.RandomBigram(seed)); err != nil {
				t.Fatal(err)
			}
		}
		e, stdout, stderr := freshTestEnv()
		args := append([]string{"score", "probes", "--model", model, "--items", itemsPath, "--out", out, "--threads", "1", "--json"}, extra...)
		if code := run(e, args); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var sum probes.Summary
		if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
			t.Fatal(err)
		}
		r, err := runfile.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return sum, r
	}
	_, plain := score(8, filepath.Join(dir, "plain.jsonl"))
	baseSum, base := score(8, filepath.Join(dir, "base.jsonl"), "--variants", "all")
	_, head := score(9, filepath.Join(dir, "head.jsonl"), "--variants", "all")
	if !reflect.DeepEqual(plain.Items, base.Items) {
		t.Error("llama.cpp scores the published items differently when variants are scored too")
	}
	if len(base.Variants) != 2*len(items) || baseSum.Variants == nil || len(baseSum.Variants.Variants) != 3 || baseSum.Margin == nil {
		t.Fatalf("%d variant records; summary variants %+v margin %v", len(base.Variants), baseSum.Variants, baseSum.Margin)
	}
	if baseSum.Items != len(items) || baseSum.Accuracy != runfile.SummarizeProbes(plain.Items).Accuracy {
		t.Errorf("headline %v over %d items, want the published score over %d", baseSum.Accuracy, baseSum.Items, len(items))
	}

	cmp := func(args ...string) string {
		t.Helper()
		e, stdout, stderr := freshTestEnv()
		if code := run(e, append([]string{"compare", filepath.Join(dir, "base.jsonl"), filepath.Join(dir, "head.jsonl"), "--resamples", "500"}, args...)); code != 0 {
			t.Fatalf("compare %v: exit %d: %s", args, code, stderr)
		}
		return stdout.String()
	}
	var c compare.Comparison
	if err := json.Unmarshal([]byte(cmp("--json")), &c); err != nil {
		t.Fatal(err)
	}
	if c.Margin == nil || c.Variants == nil || c.Variants.Base == nil || c.Variants.Head == nil || c.N != len(items) {
		t.Fatalf("compare --json: margin %+v variants %+v over %d items", c.Margin, c.Variants, c.N)
	}
	if m, _ := runfile.MeanNormMargin(base.Items); m != c.Margin.Base {
		t.Errorf("compare margin base %v, the records' mean %v", c.Margin.Base, m)
	}
	text := cmp()
	for _, want := range []string{"Probe Suite (margin, nats per byte", report.FormatCI(c.Margin.Metric, c.Margin.CI), "Probe Suite: prompt variants", "range (max − min)"} {
		if !strings.Contains(text, want) {
			t.Errorf("compare text lacks %q:\n%s", want, text)
		}
	}
	if len(head.Variants) != 2*len(items) {
		t.Errorf("head: %d variant records, want %d", len(head.Variants), 2*len(items))
	}
}

// A prompt that starts with the BOS literal is refused by id before
// anything is scored, with a non-zero exit (issue 28).
func TestScoreProbesRefusesSecondBOS(t *testing.T) {
	t.Parallel()
	needEngine(t) // it scores
	dir := t.TempDir()
	model := filepath.Join(dir, "bigram.gguf")
	if err := testmodel.WriteBigramGGUF(model, testmodel.RandomBigram(8)); err != nil {
		t.Fatal(err)
	}
	items, err := probes.Generate(probes.Options{Types: probes.TypesCore, Per: 2, Seed: 2026})
	if err != nil {
		t.Fatal(err)
	}
	bos := testmodel.RandomBigram(8).Info().BOSText
	items[3].Prompt = bos + items[3].Prompt
	itemsPath := filepath.Join(dir, "items.jsonl")
	if err := probes.WriteFile(itemsPath, items); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run.jsonl")
	e, _, stderr := freshTestEnv()
	if code := run(e, []string{"score", "probes", "--model", model, "--items", itemsPath, "--out", out, "--threads", "1"}); code == 0 {
		t.Fatal("a prompt starting with BOS was scored")
	}
	if msg := stderr.String(); !strings.Contains(msg, "item "+items[3].ID+":") || !strings.Contains(msg, bos) {
		t.Errorf("stderr %q does not name item %s and %q", msg, items[3].ID, bos)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a run file was written before the refusal")
	}
}

// A checkpoint whose tokenizer adds BOS where tokenizer_config.json says
// add_bos_token false is converted with a warning on stderr, and the
// warning travels in the GGUF's conversion record (issue 28).
func TestModelConvertWarnsOfBOSAgainstConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := converttest.Small.Write(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tokenizer.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tj map[string]any
	if err := json.Unmarshal(b, &tj); err != nil {
		t.Fatal(err)
	}
	eot := converttest.Vocab - 1
	tj["post_processor"] = map[string]any{"type": "TemplateProcessing",
		"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<|endoftext|>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
		"special_tokens": map[string]any{"<|endoftext|>": map[string]any{"id": "<|endoftext|>", "ids": []int{eot}, "tokens": []string{"<|endoftext|>"}}}}
	if b, err = json.Marshal(tj); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.gguf")
	e, _, stderr := freshTestEnv()
	if code := run(e, []string{"model", "convert", dir, "--out", out}); code != 0 {
		t.Fatalf("model convert: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "warning: the tokenizer adds BOS") || !strings.Contains(stderr.String(), "add_bos_token false") {
		t.Errorf("stderr %q: no warning", stderr)
	}
	rec, err := convert.ReadConversion(out)
	if err != nil || rec == nil || !strings.Contains(rec.Warning, "add_bos_token false") {
		t.Errorf("conversion record %+v, %v: no warning", rec, err)
	}
}
