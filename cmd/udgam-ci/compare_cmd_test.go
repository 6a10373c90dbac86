package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// compare's exit status follows --fail-on as the Action's job does
// (issue 32: a "regressed" verdict exited 0).
func TestCompareExitsByFailOn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := comparetest.SynthDocs(300, 1, 1.2, 0.2)
	write := func(name string, r *runfile.Run) string {
		p := filepath.Join(dir, name)
		if err := runfile.WriteFile(p, r); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := write("base.jsonl", comparetest.FreshRun("base", "acme/m", docs))
	worse := write("worse.jsonl", comparetest.FreshRun("worse", "acme/m", comparetest.Shifted(docs, 0.05)))
	better := write("better.jsonl", comparetest.FreshRun("better", "acme/m", comparetest.Shifted(docs, -0.05)))
	wide := comparetest.FreshRun("wide", "acme/m", comparetest.Shifted(docs, 0.05))
	wide.Header.Settings.Window = 1024
	mismatch := write("window.jsonl", wide)
	for _, tc := range []struct {
		head string
		args []string
		code int
		msg  string // on stderr
	}{
		{worse, nil, 1, "This job fails because of: fresh regressed (fail-on: regression)"},
		{worse, []string{"--fail-on", "regression"}, 1, "fresh regressed"},
		{worse, []string{"--fail-on", "never"}, 0, ""},
		{worse, []string{"--json"}, 1, "fresh regressed"},
		{better, nil, 0, ""},
		{better, []string{"--fail-on", "settings-mismatch"}, 0, ""},
		{mismatch, []string{"--allow-settings-mismatch", "--fail-on", "never"}, 0, "differs"},
		{mismatch, []string{"--allow-settings-mismatch", "--fail-on", "settings-mismatch"}, 1, "settings mismatch"},
		{worse, []string{"--fail-on", "contamination"}, 2, `--fail-on "contamination": want regression, settings-mismatch or never`},
		{worse, []string{"--fail-on", "always"}, 2, `--fail-on "always"`},
	} {
		code, stdout, stderr := runBinary(t, dir, nil, append([]string{"compare", base, tc.head, "--resamples", "500"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("compare %s %v: exit %d, stderr %q; want %d and %q", filepath.Base(tc.head), tc.args, code, stderr, tc.code, tc.msg)
		}
		if tc.code != 2 && stdout == "" {
			t.Errorf("compare %s %v: printed nothing", filepath.Base(tc.head), tc.args)
		}
	}
}

// --min-effect means the same on compare and the score commands, and the
// same as the Action's min-effect inputs: the threshold, 0 for none, the
// test's default when not given (it was 0 for the default and negative for
// none, against the Action's 0 for none).
func TestCompareMinEffect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args     []string
		bpb, acc float64 // compare.Options' fields
		usage    bool
	}{
		{nil, 0, 0, false}, // compare's defaults
		{[]string{"--min-effect", "0"}, compare.NoMinEffect, compare.NoMinEffect, false},
		{[]string{"--min-effect", "0.01"}, 0.01, 0.01, false},
		{[]string{"--min-effect", "-1"}, 0, 0, true},
		{[]string{"--min-effect", "NaN"}, 0, 0, true},
	} {
		e, _, _ := freshTestEnv()
		o, err := parseCompare(e, append([]string{"base.jsonl", "head.jsonl"}, tc.args...))
		if (err != nil) != tc.usage {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if !tc.usage && (o.Stats.MinEffectBPB != tc.bpb || o.Stats.MinEffectAccuracy != tc.acc) {
			t.Errorf("%v: min effects %g, %g; want %g, %g", tc.args, o.Stats.MinEffectBPB, o.Stats.MinEffectAccuracy, tc.bpb, tc.acc)
		}
	}
}
