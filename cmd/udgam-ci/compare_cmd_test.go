package main

import (
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sethvargo/go-githubactions"

	"github.com/udgamlabs/udgam-ci/action"
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
// same as the Action's min-effect inputs: the threshold, 0 for none, each
// test's default when not given.
func TestCompareMinEffect(t *testing.T) {
	t.Parallel()
	def := compare.NewOptions().MinEffect
	for _, tc := range []struct {
		args  []string
		want  compare.MinEffect
		usage bool
	}{
		{nil, def, false},
		{[]string{"--min-effect", "0"}, compare.MinEffect{}, false},
		{[]string{"--min-effect", "0.01"}, compare.MinEffect{BPB: 0.01, Accuracy: 0.01}, false},
		{[]string{"--min-effect", "-1"}, def, true},
		{[]string{"--min-effect", "NaN"}, def, true},
	} {
		e, _, _ := freshTestEnv()
		o, err := parseCompare(e, append([]string{"base.jsonl", "head.jsonl"}, tc.args...))
		if (err != nil) != tc.usage {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if !tc.usage && o.Stats.MinEffect != tc.want {
			t.Errorf("%v: min effects %+v; want %+v", tc.args, o.Stats.MinEffect, tc.want)
		}
	}
}

// Each test's default minimum effect is compare.DefaultMinEffect's on
// every surface: compare's options, `udgam-ci compare`, the score
// commands and audit artifact with no flags, and the Action's inputs.
func TestMinEffectDefaultsAgree(t *testing.T) {
	t.Parallel()
	e, _, _ := freshTestEnv()
	cmp, err := parseCompare(e, []string{"base.jsonl", "head.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	parsed := func(o interface{ register(*flag.FlagSet) }) {
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		o.register(fs)
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
	}
	fr, pr, au := newScoreFreshOptions(e), newScoreProbesOptions(), newAuditOptions()
	parsed(&fr)
	parsed(&pr)
	parsed(&au)
	env := map[string]string{"INPUT_MODEL": "acme/tiny", "INPUT_REVISION": strings.Repeat("a", 40)}
	in, err := action.ReadInputs(githubactions.New(githubactions.WithGetenv(func(k string) string { return env[k] }), githubactions.WithWriter(io.Discard)),
		func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	score := map[string]compare.MinEffect{runfile.TestFresh: fr.MinEffect, runfile.TestProbes: pr.MinEffect}
	inputs := map[string]float64{runfile.TestFresh: in.MinEffectBPB, runfile.TestProbes: in.MinEffectAcc}
	for _, test := range []string{runfile.TestFresh, runfile.TestProbes} {
		want := compare.DefaultMinEffect(test)
		for what, got := range map[string]float64{
			"compare.NewOptions":      compare.NewOptions().MinEffect.Of(test),
			"udgam-ci compare":        cmp.Stats.MinEffect.Of(test),
			"udgam-ci score " + test:  score[test].Of(test),
			"udgam-ci audit artifact": au.MinEffect.Of(test),
			"the Action's input":      inputs[test],
		} {
			if got != want {
				t.Errorf("%s: %s's default minimum effect %g, compare's %g", test, what, got, want)
			}
		}
	}
}
