package failon

import (
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// The verdict line outside a job follows fail-on as the job's does.
func TestVerdictOutsideAJob(t *testing.T) {
	t.Parallel()
	reg := &compare.Comparison{Test: "probes", Result: compare.Result{Metric: compare.MetricAccuracy, Verdict: compare.Regressed}}
	ok := &compare.Comparison{Test: "fresh", Result: compare.Result{Metric: compare.MetricBPB, Verdict: compare.Improved}}
	for _, tc := range []struct {
		failOn string
		cs     []*compare.Comparison
		fails  bool
		want   string
	}{
		{Regression, []*compare.Comparison{ok}, false, "This job passes (fail-on: regression)."},
		{Regression, []*compare.Comparison{ok, reg}, true, "This job fails because of: probes regressed (fail-on: regression)."},
		{Never, []*compare.Comparison{reg}, false, "This job passes (fail-on: never), with warnings: probes regressed."},
	} {
		if fails, got := Comparisons(tc.failOn, "m", tc.cs); fails != tc.fails || !strings.HasPrefix(got, tc.want) {
			t.Errorf("fail-on %s: %v, %q; want %v, %q", tc.failOn, fails, got, tc.fails, tc.want)
		}
	}
}

// Which kinds of finding each fail-on value fails on: never fails on
// none, the others on a regression and a failed audit, and
// settings-mismatch and contamination on their own kind besides.
func TestFails(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		Never:         nil,
		Regression:    {Regression, Audit},
		Mismatch:      {Regression, Audit, Mismatch},
		Contamination: {Regression, Audit, Contamination},
	}
	for _, v := range Values {
		var got []string
		for _, k := range Kinds {
			if Fails(v, k) {
				got = append(got, k)
			}
		}
		if !slices.Equal(got, want[v]) {
			t.Errorf("fail-on %s fails on %q, want %q", v, got, want[v])
		}
	}
}

// The findings come in the gate's order, each failing by its kind: the
// audit, the policy's warnings, the regressions, the settings mismatch.
func TestFindingsOrderAndKinds(t *testing.T) {
	t.Parallel()
	reg := &compare.Comparison{Test: "probes", Result: compare.Result{Metric: compare.MetricAccuracy, Verdict: compare.Regressed}}
	reg.SettingsDiff = []compare.SettingDiff{{Diff: runfile.Diff{Key: "window", Base: "2048", Head: "1024", Judged: true}}}
	f := Facts{Model: "m", Comparisons: []*compare.Comparison{reg}, Regressions: []*compare.Comparison{reg}, Mismatch: true,
		Audit: &audit.Report{Verdict: audit.Fail, Reasons: []string{"too far"}}, Artifact: "q4.gguf",
		Policy: []Finding{{Title: "udgam-ci: looser gate refused", Msg: "no"}}}
	fs := Findings(Mismatch, f)
	var titles []string
	for _, x := range fs {
		titles = append(titles, x.Title)
	}
	wantTitles := []string{"udgam-ci: artifact audit failed", "udgam-ci: looser gate refused", "udgam-ci: probes regressed", "udgam-ci: settings mismatch"}
	if !slices.Equal(titles, wantTitles) {
		t.Fatalf("findings %q, want %q", titles, wantTitles)
	}
	if !fs[0].Fails || fs[1].Fails || !fs[2].Fails || !fs[3].Fails || fs[2].Test != "probes" {
		t.Errorf("findings under settings-mismatch: %+v", fs)
	}
	if !strings.Contains(fs[3].Msg, "probes window") {
		t.Errorf("the mismatch does not name the setting: %q", fs[3].Msg)
	}
	if fails, line := Verdict(Never, Findings(Never, f)); fails || !strings.Contains(line, "with warnings: artifact audit failed; looser gate refused") {
		t.Errorf("fail-on never: %v %q", fails, line)
	}
}
