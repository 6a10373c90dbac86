package audit

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/report"
)

// The same rows feed the terminal table and the Markdown section, so
// both show the same numbers, formatted by package report.

type row []string

func (r *Report) title() string {
	made := ""
	if r.Quantized != "" {
		made = " (" + r.Quantized + ", made by udgam-ci's llama.cpp quantizer)"
	}
	return fmt.Sprintf("Artifact audit: %s%s against %s", label(r.Artifact), made, label(r.Reference))
}

func label(s Side) string {
	if s.File != "" {
		return filepath.Base(s.File) + " [" + s.Dtype + "]"
	}
	return s.Name + " [" + s.Dtype + "]"
}

func scoreRow(name string, c *compare.Comparison) row {
	return row{name, report.FormatScore(c.Metric, c.Base), report.FormatScore(c.Metric, c.Head),
		report.FormatDelta(c.Metric, c.Delta), report.FormatCI(c.Metric, c.CI), worseMark(c.Result)}
}

func worseMark(r compare.Result) string {
	switch {
	case r.TooFew:
		return "too few"
	case r.Verdict == compare.Regressed:
		return "worse"
	case r.Verdict == compare.Improved:
		return "better"
	}
	return "no change"
}

func (r *Report) summaryRows() []row {
	return []row{
		{"", "reference", "artifact", "change", "95% interval", ""},
		scoreRow("Fresh Text (bits per byte)", r.Fresh),
		scoreRow("Probe Suite (accuracy %)", r.Probes),
	}
}

func (r *Report) klLine() string {
	return fmt.Sprintf("KL divergence of the artifact from the reference, per Fresh Text token (%s tokens, full distributions): mean %s nats, 99th percentile %s, max %s; same most likely token %s%%.",
		report.FormatCount(r.KL.Tokens), kl(r.KL.Mean), kl(r.KL.P99), kl(r.KL.Max),
		strconv.FormatFloat(100*r.KL.SameTop, 'f', 2, 64))
}

func kl(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func flipRow(name string, res compare.Result, worse bool) row {
	rw, wr := 0, 0
	if res.Flips != nil {
		rw, wr = res.Flips.RightToWrong, res.Flips.WrongToRight
	}
	mark := worseMark(res)
	if worse {
		mark = "**worse**"
	}
	return row{name, report.FormatScore(compare.MetricAccuracy, res.Base), report.FormatScore(compare.MetricAccuracy, res.Head),
		report.FormatDelta(compare.MetricAccuracy, res.Delta), report.FormatCI(compare.MetricAccuracy, res.CI),
		strconv.Itoa(rw), strconv.Itoa(wr), mark}
}

var flipHeader = row{"type", "reference", "artifact", "change", "95% interval", "right→wrong", "wrong→right", ""}

func (r *Report) verdictLine() string {
	lim := fmt.Sprintf("limits: bits per byte +%g, accuracy −%g points, each only when significant", r.Limits.BPB, r.Limits.Accuracy)
	if r.Verdict == Pass {
		return "Verdict: pass (" + lim + ")."
	}
	return "Verdict: FAIL: " + strings.Join(r.Reasons, "; ") + " (" + lim + ")."
}

// RenderText writes the audit as a terminal table.
func RenderText(w io.Writer, r *Report) error {
	var b strings.Builder
	b.WriteString(r.title() + "\n\n")
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	for _, rw := range r.summaryRows() {
		fmt.Fprintln(tw, strings.Join(rw, "\t"))
	}
	tw.Flush()
	b.WriteString("\n" + r.klLine() + "\n\nProbe Suite flips by type (significantly worse first):\n")
	tw = tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(flipHeader, "\t"))
	for _, t := range r.Types {
		mark := flipRow(t.Type, t.Result, t.Worse)
		mark[7] = strings.Trim(mark[7], "*")
		fmt.Fprintln(tw, strings.Join(mark, "\t"))
		for _, l := range t.Levels {
			fmt.Fprintln(tw, strings.Join(flipRow("  "+l.Level, l.Result, false), "\t"))
		}
	}
	tw.Flush()
	b.WriteString("\n" + r.verdictLine() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// RenderMarkdown writes the audit as a section of a PR comment.
func RenderMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	icon := "✅"
	if r.Verdict == Fail {
		icon = "❌"
	}
	fmt.Fprintf(&b, "### %s %s\n\n", icon, mdEscape(r.title()))
	table(&b, r.summaryRows())
	b.WriteString("\n" + r.klLine() + "\n\n")
	b.WriteString("Probe Suite flips by type, significantly worse first:\n\n")
	rows := []row{flipHeader}
	for _, t := range r.Types {
		rows = append(rows, flipRow(t.Type, t.Result, t.Worse))
	}
	table(&b, rows)
	b.WriteString("\n<details><summary>By level</summary>\n\n")
	levelHeader := append(row{"type/level"}, flipHeader[1:]...)
	rows = []row{levelHeader}
	for _, t := range r.Types {
		for _, l := range t.Levels {
			rows = append(rows, flipRow(l.Level, l.Result, false))
		}
	}
	table(&b, rows)
	b.WriteString("\n</details>\n\n**" + r.verdictLine() + "**\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func table(b *strings.Builder, rows []row) {
	for i, rw := range rows {
		cells := make([]string, len(rw))
		for k, c := range rw {
			cells[k] = mdEscape(c)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		if i == 0 {
			b.WriteString(strings.Repeat("|---", len(rw)) + "|\n")
		}
	}
}

// mdEscape keeps file names and the like from breaking a table.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}
