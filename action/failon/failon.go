// Package failon is the gate's policy across commands: what a job found
// (its findings), which of them fail it under fail-on, and the verdict in
// one sentence. The Action and `udgam-ci compare` both call it, so the two
// exit alike on the same comparisons. It is pure: values in, values out,
// no state and no I/O.
package failon

import (
	"fmt"
	"strings"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/contamination"
	"github.com/udgamlabs/udgam-ci/report"
)

// The values fail-on takes.
const (
	Regression = "regression"
	Mismatch   = "settings-mismatch"
	Never      = "never"
	// Contamination also fails when the training-data scan finds test
	// items in the training data.
	Contamination = "contamination"
	// Default is fail-on's default, on the Action and on `udgam-ci compare`.
	Default = Regression
)

// Values are fail-on's values, in the order action.yml lists them.
var Values = []string{Regression, Mismatch, Contamination, Never}

// Audit is the kind of finding an artifact audit beyond its limits is;
// the other kinds are named by the fail-on value that fails on them alone.
const Audit = "audit"

// Kinds are the kinds of finding fail-on decides about.
var Kinds = []string{Regression, Audit, Mismatch, Contamination}

// Fails reports whether fail-on makes a finding of kind fail the job:
// every value but never fails on a regression and a failed audit, and
// settings-mismatch and contamination on their own kind besides.
func Fails(failOn, kind string) bool {
	if kind == Regression || kind == Audit {
		return failOn != Never
	}
	return failOn == kind
}

// Finding is one thing the gate reports: it fails the job when fail-on
// says so (an error annotation), and is a warning otherwise.
type Finding struct {
	Title, Msg string
	Fails      bool
	Test       string // the test it concerns, "" for the whole run
}

// Facts are what a job found that the gate judges. Regressions and
// Drifts are those that stand once the comparisons are judged as one
// family (Family).
type Facts struct {
	Model string
	// Comparisons are with the baseline; Mismatch says that one of them,
	// or the report server, found the baseline's settings different.
	Comparisons  []*compare.Comparison
	Mismatch     bool
	Regressions  []*compare.Comparison
	Drifts       []*compare.Comparison // beyond the drift budget since the anchor
	AnchorErrors []string              // anchors named that could not be compared
	// Audit is the artifact audit of Artifact; nil without one.
	Audit    *audit.Report
	Artifact string
	// Scan is the training-data scan, written to ScanPath; nil without one.
	Scan     *contamination.Report
	ScanPath string
	// Policy are the findings of the base's policy: warnings, since the
	// verdict is the base's (or the accepted) gate's.
	Policy []Finding
}

// Findings lists what the gate reports under failOn, in the order it
// reports them.
func Findings(failOn string, f Facts) []Finding {
	var out []Finding
	if f.Audit != nil && f.Audit.Verdict == audit.Fail {
		out = append(out, Finding{Title: "udgam-ci: artifact audit failed",
			Msg:   "artifact " + f.Artifact + ": " + strings.Join(f.Audit.Reasons, "; "),
			Fails: Fails(failOn, Audit)})
	}
	out = append(out, f.Policy...)
	if found(f.Scan) {
		out = append(out, Finding{Title: "udgam-ci: test items in the training data",
			Msg:   "contamination: " + f.Scan.Line() + " (see " + f.ScanPath + ")",
			Fails: Fails(failOn, Contamination)})
	}
	for _, c := range f.Regressions {
		unit := ""
		if c.Metric == compare.MetricAccuracy {
			unit = " points"
		}
		msg := fmt.Sprintf("%s %s regressed: %s %s -> %s, delta %s%s (%s %s) against baseline run %s",
			f.Model, c.Test, c.Metric, report.FormatScore(c.Metric, c.Base), report.FormatScore(c.Metric, c.Head),
			report.FormatDelta(c.Metric, c.Delta), unit, report.IntervalLabel(c.Level()), report.FormatCI(c.Metric, c.CI), c.BaseRun.ID)
		out = append(out, Finding{Title: "udgam-ci: " + c.Test + " regressed", Msg: msg, Fails: Fails(failOn, Regression), Test: c.Test})
	}
	out = append(out, driftFindings(failOn, f)...)
	if f.Mismatch {
		out = append(out, Finding{Title: "udgam-ci: settings mismatch", Msg: mismatch(f.Comparisons), Fails: Fails(failOn, Mismatch)})
	}
	return out
}

// found reports whether the scan found any test item.
func found(rep *contamination.Report) bool {
	if rep == nil {
		return false
	}
	for _, s := range rep.Summary {
		if s.Contaminated > 0 {
			return true
		}
	}
	return false
}

// driftFindings are the gate's findings about the anchor: a change since
// it beyond the drift budget, or an anchor named that could not be
// compared. Both are of the regression kind: they fail the job wherever
// a regression does.
func driftFindings(failOn string, f Facts) []Finding {
	var out []Finding
	for _, c := range f.Drifts {
		msg := fmt.Sprintf("%s %s drifted since anchor run %s: %s %s -> %s, change %s (%s %s), beyond the drift budget of %s",
			f.Model, c.Test, c.BaseRun.ID, c.Metric, report.FormatScore(c.Metric, c.Base), report.FormatScore(c.Metric, c.Head),
			report.FormatDelta(c.Metric, c.Delta), report.IntervalLabel(c.Level()), report.FormatCI(c.Metric, c.CI), report.FormatEffect(c.Metric, c.MinEffect))
		out = append(out, Finding{Title: "udgam-ci: " + c.Test + " drifted since the anchor", Msg: msg, Fails: Fails(failOn, Regression), Test: c.Test})
	}
	for _, e := range f.AnchorErrors {
		out = append(out, Finding{Title: "udgam-ci: no anchor comparison", Msg: "the drift budget could not be checked: " + e, Fails: Fails(failOn, Regression)})
	}
	return out
}

// mismatch says which judged settings differ; with none in the
// comparisons, the report server flagged them.
func mismatch(cs []*compare.Comparison) string {
	var diffs []string
	for _, c := range cs {
		for _, d := range c.SettingsDiff {
			if d.Refuses() {
				diffs = append(diffs, c.Test+" "+d.String())
			}
		}
	}
	if len(diffs) == 0 {
		return "the report server flagged the baseline's settings as different from this run's"
	}
	return "the baseline was scored with other settings, so the deltas are not like for like: " + strings.Join(diffs, "; ")
}

// Verdict says in one sentence what the job concludes under failOn, for
// the top of the comment and the Check run's title.
func Verdict(failOn string, fs []Finding) (fails bool, line string) {
	var why, warn []string
	for _, f := range fs {
		reason := strings.TrimPrefix(f.Title, "udgam-ci: ")
		if f.Fails {
			why = append(why, reason)
		} else {
			warn = append(warn, reason)
		}
	}
	if len(why) > 0 {
		return true, fmt.Sprintf("This job fails because of: %s (fail-on: %s). Fix it, or change fail-on if this is expected.", strings.Join(why, "; "), failOn)
	}
	line = fmt.Sprintf("This job passes (fail-on: %s).", failOn)
	if len(warn) > 0 {
		line = fmt.Sprintf("This job passes (fail-on: %s), with warnings: %s.", failOn, strings.Join(warn, "; "))
	}
	return false, line
}

// Family judges every comparison the gate reads as one family
// (compare.Family) and returns the regressions and the drifts that
// stand. A comparison with the anchor without a budget (MinEffect 0) can
// never fail the gate, so it is not in the family.
func Family(comparisons, anchors []*compare.Comparison) (regressions, drifts []*compare.Comparison) {
	all := append([]*compare.Comparison{}, comparisons...)
	for _, c := range anchors {
		if c.MinEffect > 0 {
			all = append(all, c)
		}
	}
	compare.Family(all, compare.FamilyAlpha)
	for _, c := range comparisons {
		if c.Verdict == compare.Regressed {
			regressions = append(regressions, c)
		}
	}
	for _, c := range anchors {
		if c.Verdict == compare.Regressed {
			drifts = append(drifts, c)
		}
	}
	return regressions, drifts
}

// Comparisons is what the Action concludes under failOn from comparisons
// made outside a job, with no scan, no anchor and no server (judged
// together as the Action judges them): whether the job fails, and the
// comment's verdict line. `udgam-ci compare --fail-on` exits by it and the
// demo's comment shows its line.
func Comparisons(failOn, model string, cs []*compare.Comparison) (fails bool, line string) {
	f := Facts{Model: model, Comparisons: cs}
	for _, c := range cs {
		f.Mismatch = f.Mismatch || c.Mismatch
	}
	f.Regressions, _ = Family(cs, nil)
	return Verdict(failOn, Findings(failOn, f))
}
