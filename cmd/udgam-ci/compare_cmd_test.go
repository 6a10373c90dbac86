package main

import (
	"path/filepath"
	"strings"
	"testing"

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
