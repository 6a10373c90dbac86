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
