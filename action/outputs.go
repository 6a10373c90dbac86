package action

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// headline is a run's score and its metric.
func headline(run *runfile.Run) (metric string, value float64) {
	if run.Header.Test == runfile.TestFresh {
		return report.MetricBPB, runfile.SummarizeFresh(run.Docs).BPB
	}
	return report.MetricAccuracy, runfile.SummarizeProbes(run.Items).Accuracy
}

func formatScore(metric string, v float64) string {
	if metric == report.MetricBPB {
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
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
	return names
}

func (r *actionRun) outputs(res Result, links []report.Link) {
	for i, h := range res.Heads {
		metric, v := headline(h)
		r.setOutput(h.Header.Test+"-score", formatScore(metric, v))
		r.setOutput(h.Header.Test+"-run-file", res.HeadFiles[i])
	}
	r.setOutput("run-files", strings.Join(res.HeadFiles, ","))
	verdict := "none"
	for _, c := range res.Comparisons {
		p := c.Test + "-"
		r.setOutput(p+"base", formatScore(c.Metric, c.Base))
		r.setOutput(p+"delta", formatScore(c.Metric, c.Delta))
		r.setOutput(p+"ci-low", formatScore(c.Metric, c.CI[0]))
		r.setOutput(p+"ci-high", formatScore(c.Metric, c.CI[1]))
		r.setOutput(p+"verdict", string(c.Verdict))
		verdict = worse(verdict, string(c.Verdict))
	}
	r.setOutput("verdict", verdict)
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
	rank := map[string]int{"none": 0, string(report.NoChange): 1, string(report.Improved): 2, string(report.Regressed): 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// gate turns the findings into the exit code fail-on asks for, with an
// error annotation naming each reason.
func (r *actionRun) gate(res Result) int {
	failOnRegression := r.in.FailOn != FailOnNever
	code := 0
	if r.found() {
		msg := "contamination: " + r.scanReport.Line() + " (see " + r.scanPath + ")"
		title := map[string]string{"title": "udgam-ci: test items in the training data"}
		if r.in.FailOn == FailOnContamination {
			r.a.WithFieldsMap(title).Errorf("%s", msg)
			code = 1
		} else {
			r.a.WithFieldsMap(title).Warningf("%s", msg)
		}
	}
	for _, c := range res.Regressions {
		unit := ""
		if c.Metric == report.MetricAccuracy {
			unit = " points"
		}
		msg := fmt.Sprintf("%s %s regressed: %s %s -> %s, delta %+g%s (%g%% interval [%g, %g]) against baseline run %s",
			r.in.ModelName, c.Test, c.Metric, formatScore(c.Metric, c.Base), formatScore(c.Metric, c.Head),
			round(c.Delta), unit, c.Confidence*100, round(c.CI[0]), round(c.CI[1]), c.BaseRun.ID)
		title := map[string]string{"title": "udgam-ci: " + c.Test + " regressed"}
		if failOnRegression {
			r.a.WithFieldsMap(title).Errorf("%s", msg)
			code = 1
		} else {
			r.a.WithFieldsMap(title).Warningf("%s", msg)
		}
	}
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
		title := map[string]string{"title": "udgam-ci: settings mismatch"}
		if r.in.FailOn == FailOnMismatch {
			r.a.WithFieldsMap(title).Errorf("%s", msg)
			code = 1
		} else {
			r.a.WithFieldsMap(title).Warningf("%s", msg)
		}
	}
	return code
}

// round keeps annotation numbers short.
func round(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return f
}

// scoresMarkdown is the job summary when nothing was compared: a push
// recording the baseline, or no baseline yet.
func scoresMarkdown(model string, heads []*runfile.Run, links []report.Link, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## udgam-ci: `%s`\n\n| test | metric | score | records | run |\n|---|---|---:|---:|---|\n", model)
	for _, h := range heads {
		metric, v := headline(h)
		fmt.Fprintf(&b, "| %s | %s | %s | %d | `%s` |\n", h.Header.Test, metric, formatScore(metric, v), h.Len(), h.Header.ID)
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
