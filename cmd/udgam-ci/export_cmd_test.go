package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// TestExportCommand: runs and a comparison to both formats, to stdout
// and to a file it will not overwrite without --force.
func TestExportCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, sp servertest.Spec) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, sp.Body(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fresh := write("fresh.jsonl", servertest.Spec{Test: runfile.TestFresh, Seed: 1, Records: 100})
	probes := write("probes.jsonl", servertest.Spec{Test: runfile.TestProbes, Seed: 1, Records: 200, Score: 30})
	base := write("base.jsonl", servertest.Spec{Test: runfile.TestProbes, Seed: 2, Records: 200, Score: 70})
	bg := context.Background()

	e, out, errb := serverTestEnv(bg, nil)
	if code := run(e, []string{"export", fresh, probes, "--base", base}); code != 0 {
		t.Fatalf("export: %d %s", code, errb)
	}
	for _, want := range []string{"model-index:", "type: bits_per_byte", "type: accuracy_change", "(regressed)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("model-index lacks %q:\n%s", want, out)
		}
	}
	file := filepath.Join(dir, "results_2026-11-30T12-00-00.000000.json")
	e, _, errb = serverTestEnv(bg, nil)
	if code := run(e, []string{"export", "--format", "lm-eval", "--output", file, probes}); code != 0 {
		t.Fatalf("export lm-eval: %d %s", code, errb)
	}
	var res struct {
		Results map[string]map[string]any `json:"results"`
	}
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if v, _ := res.Results["udgam_probes"]["acc,none"].(float64); v <= 0.2 || v >= 0.4 {
		t.Errorf("acc,none = %v", v)
	}
	for _, args := range [][]string{
		{"export", "--format", "lm-eval", "--output", file, probes}, // exists
		{"export", "--format", "csv", probes},                       // unknown format
		{"export"},                                                  // no runs
		{"export", fresh, "--base", base},                           // a base without its test's run
		{"export", probes, filepath.Join(dir, "missing.jsonl")},     // no such file
	} {
		e, _, errb = serverTestEnv(bg, nil)
		if code := run(e, args); code == 0 || errb.Len() == 0 {
			t.Errorf("%v: exit %d, %q", args, code, errb)
		}
	}
	e, _, errb = serverTestEnv(bg, nil)
	if code := run(e, []string{"export", "--format", "lm-eval", "--output", file, "--force", fresh}); code != 0 {
		t.Errorf("--force: %d %s", code, errb)
	}
}
