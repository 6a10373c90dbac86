package action

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// headline is a run's score and its metric.
func headline(run *runfile.Run) (metric string, value float64) {
	if run.Header.Test == runfile.TestFresh {
		return compare.MetricBPB, runfile.SummarizeFresh(run.Docs).BPB
	}
	return compare.MetricAccuracy, runfile.SummarizeProbes(run.Items).Accuracy
}

// setOutput writes a step output; outside a runner (no GITHUB_OUTPUT) it
// logs it instead.
func (r *actionRun) setOutput(name, value string) {
	if r.d.Getenv("GITHUB_OUTPUT") == "" {
		r.a.Infof("output %s=%s", name, value)
		return
	}
	r.a.SetOutput(name, value)
}

// OutputNames lists every output `udgam-ci action` may set, as action.yml
// declares them.
func OutputNames() []string {
	names := []string{"verdict", "settings-mismatch", "run-files", "run-url", "run-urls", "comment-url"}
	for _, t := range validTestNames {
		names = append(names, t+"-score", t+"-run-file", t+"-base", t+"-delta", t+"-ci-low", t+"-ci-high", t+"-verdict")
	}
	names = append(names, "drift")
	for _, t := range validTestNames {
		names = append(names, t+"-anchor-delta", t+"-anchor-ci-low", t+"-anchor-ci-high")
	}
	return names
}

func (r *actionRun) outputs(res Result, links []report.Link) {
	for i, h := range res.Heads {
		metric, v := headline(h)
		r.setOutput(h.Header.Test+"-score", report.FormatOutput(metric, v))
		r.setOutput(h.Header.Test+"-run-file", res.HeadFiles[i])
	}
	r.setOutput("run-files", strings.Join(res.HeadFiles, ","))
	verdict := "none"
	for _, c := range res.Comparisons {
		p := c.Test + "-"
		r.setOutput(p+"base", report.FormatOutput(c.Metric, c.Base))
		r.setOutput(p+"delta", report.FormatOutput(c.Metric, c.Delta))
		r.setOutput(p+"ci-low", report.FormatOutput(c.Metric, c.CI[0]))
		r.setOutput(p+"ci-high", report.FormatOutput(c.Metric, c.CI[1]))
		r.setOutput(p+"verdict", string(c.Verdict))
		verdict = worse(verdict, string(c.Verdict))
	}
	r.setOutput("verdict", verdict)
	drift := "none"
	for _, c := range res.Anchors {
		p := c.Test + "-anchor-"
		r.setOutput(p+"delta", report.FormatOutput(c.Metric, c.Delta))
		r.setOutput(p+"ci-low", report.FormatOutput(c.Metric, c.CI[0]))
		r.setOutput(p+"ci-high", report.FormatOutput(c.Metric, c.CI[1]))
		drift = "within"
	}
	if len(res.Drifts) > 0 {
		drift = "beyond"
	}
	r.setOutput("drift", drift)
	r.setOutput("settings-mismatch", strconv.FormatBool(res.Mismatch))
	var urls []string
	for _, l := range links {
		urls = append(urls, l.URL)
	}
	if len(urls) > 0 {
		r.setOutput("run-url", urls[0])
		r.setOutput("run-urls", strings.Join(urls, ","))
	}
	if res.Comment != nil {
		r.setOutput("comment-url", res.Comment.URL)
	}
}

// worse orders verdicts so the overall one is the most alarming.
func worse(a, b string) string {
	rank := map[string]int{"none": 0, string(compare.NoChange): 1, string(compare.Improved): 2, string(compare.Regressed): 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// finding is one thing the gate reports: it fails the job when fail-on
// says so (an error annotation), and is a warning otherwise.
type finding struct {
	title, msg string
	fails      bool
	test       string // the test it concerns, "" for the whole run
}

// failAudit is the kind of finding an artifact audit beyond its limits is;
// the other kinds are named by the fail-on value that fails on them alone.
const failAudit = "audit"

// findingKinds are the kinds of finding fail-on decides about.
var findingKinds = []string{FailOnRegression, failAudit, FailOnMismatch, FailOnContamination}

// failsOn reports whether fail-on makes a finding of kind fail the job:
// every value but never fails on a regression and a failed audit, and
// settings-mismatch and contamination on their own kind besides.
func failsOn(failOn, kind string) bool {
	if kind == FailOnRegression || kind == failAudit {
		return failOn != FailOnNever
	}
	return failOn == kind
}

// findings lists what the gate reports, in the order it reports them.
func (r *actionRun) findings(res Result) []finding {
	out := r.auditFinding()
	out = append(out, r.gateState.finding()...)
	if r.found() {
		out = append(out, finding{title: "udgam-ci: test items in the training data",
			msg:   "contamination: " + r.scanReport.Line() + " (see " + r.scanPath + ")",
			fails: failsOn(r.in.FailOn, FailOnContamination)})
	}
	for _, c := range res.Regressions {
		unit := ""
		if c.Metric == compare.MetricAccuracy {
			unit = " points"
		}
		msg := fmt.Sprintf("%s %s regressed: %s %s -> %s, delta %s%s (%s %s) against baseline run %s",
			r.in.ModelName, c.Test, c.Metric, report.FormatScore(c.Metric, c.Base), report.FormatScore(c.Metric, c.Head),
			report.FormatDelta(c.Metric, c.Delta), unit, report.IntervalLabel(c.Level()), report.FormatCI(c.Metric, c.CI), c.BaseRun.ID)
		out = append(out, finding{title: "udgam-ci: " + c.Test + " regressed", msg: msg, fails: failsOn(r.in.FailOn, FailOnRegression), test: c.Test})
	}
	out = append(out, r.driftFindings(res)...)
	if res.Mismatch {
		var diffs []string
		for _, c := range res.Comparisons {
			for _, d := range c.SettingsDiff {
				if d.Judged && !d.Expected {
					diffs = append(diffs, c.Test+" "+d.String())
				}
			}
		}
		msg := "the baseline was scored with other settings, so the deltas are not like for like: " + strings.Join(diffs, "; ")
		if len(diffs) == 0 {
			msg = "the report server flagged the baseline's settings as different from this run's"
		}
		out = append(out, finding{title: "udgam-ci: settings mismatch", msg: msg, fails: failsOn(r.in.FailOn, FailOnMismatch)})
	}
	return out
}

// gate turns the findings into the exit code fail-on asks for, with an
// error annotation naming each reason.
func (r *actionRun) gate(res Result) int {
	code := 0
	for _, f := range r.findings(res) {
		title := map[string]string{"title": f.title}
		if f.fails {
			r.a.WithFieldsMap(title).Errorf("%s", f.msg)
			code = 1
		} else {
			r.a.WithFieldsMap(title).Warningf("%s", f.msg)
		}
	}
	return code
}

// jobVerdict says in one sentence what the job concludes under fail-on,
// for the top of the comment and the Check run's title.
func jobVerdict(failOn string, fs []finding) (fails bool, line string) {
	var why, warn []string
	for _, f := range fs {
		reason := strings.TrimPrefix(f.title, "udgam-ci: ")
		if f.fails {
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

// scoresMarkdown is the job summary when nothing was compared: a push
// recording the baseline, or no baseline yet.
func scoresMarkdown(model string, heads []*runfile.Run, links []report.Link, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## udgam-ci: `%s`\n\n| test | metric | score | records | run |\n|---|---|---:|---:|---|\n", model)
	for _, h := range heads {
		metric, v := headline(h)
		fmt.Fprintf(&b, "| %s | %s | %s | %d | `%s` |\n", h.Header.Test, metric, report.FormatOutput(metric, v), h.Len(), h.Header.ID)
	}
	for _, l := range links {
		fmt.Fprintf(&b, "\n[%s](%s)", l.Text, l.URL)
	}
	if len(links) > 0 {
		b.WriteString("\n")
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "\n> [!WARNING]\n> %s\n", oneLine(n))
	}
	return b.String()
}

// gateMarkdown is the gate's lines as paragraphs, for a job summary that
// compares nothing.
func gateMarkdown(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "\n" + strings.Join(lines, "\n\n") + "\n"
}

// Gate is what the Action concludes under failOn from comparisons made
// outside a job, with no scan and no server (their regressions judged
// together as the Action judges them): whether the job fails, and
// the comment's verdict line. `udgam-ci compare --fail-on` exits by it and
// the demo's comment shows its line.
func Gate(failOn, model string, cs []*compare.Comparison) (fails bool, line string) {
	r := &actionRun{in: Inputs{FailOn: failOn, ModelName: model}}
	res := Result{Comparisons: cs}
	for _, c := range cs {
		res.Mismatch = res.Mismatch || c.Mismatch
	}
	judgeFamily(&res)
	return jobVerdict(failOn, r.findings(res))
}
