package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// score probes --until decided --budget N --baseline RUN stops at the
// budget, and compare --json and the text report show the interval the
// run stopped with.
func TestScoreUntilDecidedCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	items := generateItems(t, dir, 5)
	score := func(seed int64, out string, more func(*scoreProbesOptions)) {
		t.Helper()
		open := func(string, int, bool) (runner.Model, error) { return testmodel.RandomBigram(seed), nil }
		o := scoreProbesOptions{Model: "bigram.gguf", Items: items, Open: open}
		o.Run.Out, o.Run.BOSMode = out, "auto"
		o.Level = compare.DefaultConfidence
		if more != nil {
			more(&o)
		}
		e, _, stderr := freshTestEnv()
		if err := scoreProbes(e, o); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
	}
	base := filepath.Join(dir, "base.jsonl")
	score(3, base, nil)
	head := filepath.Join(dir, "head.jsonl")
	score(4, head, func(o *scoreProbesOptions) {
		o.Until, o.Baseline, o.Budget, o.MinEffect = "decided", base, "60", compare.MinEffect{}
	})

	h, err := runfile.ReadFile(head)
	if err != nil {
		t.Fatal(err)
	}
	st := h.Header.Sequential.Stop
	if st == nil || h.Len() != st.Scored || st.Scored > 60 {
		t.Fatalf("head run: %d records, stop %+v", h.Len(), st)
	}
	c := compareJSON(t, base, head)
	if c.Sequential == nil || c.Sequential.Scored != st.Scored || c.Sequential.Total != 105 || c.CI != st.CI || c.Sequential.CI != st.CI {
		t.Errorf("compare --json: ci %v sequential %+v; the run stopped with %+v", c.CI, c.Sequential, st)
	}
	e, stdout, _ := freshTestEnv()
	if code := run(e, []string{"compare", base, head}); code != 0 || !strings.Contains(stdout.String(), fmt.Sprintf("after %d of 105 items", st.Scored)) {
		t.Errorf("compare text: exit %d\n%s", code, stdout.String())
	}

	for _, args := range [][]string{
		{"score", "probes", "--model", "m.gguf", "--out", filepath.Join(dir, "x.jsonl"), "--until", "decided"},
		{"score", "probes", "--model", "m.gguf", "--out", filepath.Join(dir, "x.jsonl"), "--budget", "10"},
		{"score", "probes", "--model", "m.gguf", "--out", filepath.Join(dir, "x.jsonl"), "--until", "soon"},
		{"score", "probes", "--model", "m.gguf", "--out", filepath.Join(dir, "x.jsonl"), "--until", "decided", "--baseline", base, "--budget", "later"},
	} {
		e, _, stderr := freshTestEnv()
		if code := run(e, args); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args[6:], code, stderr.String())
		}
	}
}
