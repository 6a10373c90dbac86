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

// Section is the audit as every surface shows it: the terminal table, the
// Markdown section of a PR comment and the report server's pages all
// render these cells, so they show the same numbers, formatted once (by
// package report) here.
type Section struct {
	Title  string
	Failed bool
	// Data names what both tests scored ("Fresh Text: the smoke sample,
	// 30 documents, not the benchmark; ..."): every surface shows it.
	Data string
	// Summary is the two tests' scores: a header row, then Fresh Text and
	// the Probe Suite.
	Summary [][]string
	KL      string
	// FlipHeader heads Types' rows; LevelHeader heads their levels'.
	FlipHeader, LevelHeader []string
	Types                   []SectionType
	Verdict                 string
}

// SectionType is one probe type's row and its levels' rows.
type SectionType struct {
	Cells  []string
	Worse  bool // significantly worse: the row is marked
	Levels [][]string
}

// Section gathers the cells of the report's tables and its lines.
func (r *Report) Section() Section {
	s := Section{
		Title:  r.title(),
		Failed: r.Verdict == Fail,
		Data:   "Data scored: " + dataOf("Fresh Text", "documents", r.Fresh) + "; " + dataOf("Probe Suite", "items", r.Probes) + ".",
		Summary: [][]string{
			{"", "reference", "artifact", "change", "95% interval", ""},
			scoreRow("Fresh Text (bits per byte)", r.Fresh),
			scoreRow("Probe Suite (accuracy %)", r.Probes),
		},
		KL:          r.klLine(),
		FlipHeader:  []string{"type", "reference", "artifact", "change", "95% interval", "right→wrong", "wrong→right", ""},
		LevelHeader: []string{"type/level", "reference", "artifact", "change", "95% interval", "right→wrong", "wrong→right", ""},
		Verdict:     r.verdictLine(),
	}
	for _, t := range r.Types {
		st := SectionType{Cells: flipRow(t.Type, t.Result, r.Probes.MinEffect, t.Worse), Worse: t.Worse}
		for _, l := range t.Levels {
			st.Levels = append(st.Levels, flipRow(l.Level, l.Result, r.Probes.MinEffect, false))
		}
		s.Types = append(s.Types, st)
	}
	return s
}

// dataOf names the data one test of the audit scored: the set, how many
// of it, and whether it was the smoke sample.
func dataOf(test, noun string, c *compare.Comparison) string {
	h := c.HeadRun
	n := report.FormatCount(c.N) + " " + noun
	if h.DatasetCount > 0 && h.DatasetCount != c.N {
		n = report.FormatCount(c.N) + " of " + report.FormatCount(h.DatasetCount) + " " + noun
	}
	if h.Smoke {
		return test + ": the smoke sample, " + n + ", not the benchmark"
	}
	name := h.Dataset
	if h.DatasetRevision != "" {
		name += " " + h.DatasetRevision
	}
	return test + ": " + name + ", " + n
}

func (r *Report) title() string {
	return fmt.Sprintf("Artifact audit: %s against %s", r.ArtifactName(), label(r.Reference))
}

// ArtifactName names the artifact as the title does: its file and type,
// and whether udgam-ci made it.
func (r *Report) ArtifactName() string {
	if r.Quantized != "" {
		return label(r.Artifact) + " (" + r.Quantized + ", made by udgam-ci's llama.cpp quantizer)"
	}
	return label(r.Artifact)
}

func label(s Side) string {
	if s.File != "" {
		return filepath.Base(s.File) + " [" + s.Dtype + "]"
	}
	return s.Name + " [" + s.Dtype + "]"
}

func scoreRow(name string, c *compare.Comparison) []string {
	return []string{name, report.FormatScore(c.Metric, c.Base), report.FormatScore(c.Metric, c.Head),
		report.FormatDelta(c.Metric, c.Delta), report.FormatCI(c.Metric, c.CI), worseMark(c.Result, c.Metric, c.MinEffect)}
}

// worseMark says what a change's test found. An interval that excludes
// zero around a change smaller than the minimum effect is said to be so:
// "no change" beside [0.0000, +0.0026] (p = 0.043) reads as a
// contradiction.
func worseMark(r compare.Result, metric string, minEffect float64) string {
	switch {
	case r.TooFew:
		return "too few"
	case r.Verdict == compare.Regressed:
		return "worse"
	case r.Verdict == compare.Improved:
		return "better"
	case r.CI[0] > 0 || r.CI[1] < 0:
		return "smaller than the " + report.FormatMinEffect(metric, minEffect) + " minimum effect"
	}
	return "no change"
}

func (r *Report) klLine() string {
	return fmt.Sprintf("KL divergence of the artifact from the reference, per Fresh Text token (%s tokens, full distributions): mean %s nats, 99th percentile %s, max %s; same most likely token %s%%.",
		report.FormatCount(r.KL.Tokens), kl(r.KL.Mean), kl(r.KL.P99), kl(r.KL.Max),
		strconv.FormatFloat(100*r.KL.SameTop, 'f', 2, 64))
}

func kl(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func flipRow(name string, res compare.Result, minEffect float64, worse bool) []string {
	rw, wr := 0, 0
	if res.Flips != nil {
		rw, wr = res.Flips.RightToWrong, res.Flips.WrongToRight
	}
	mark := worseMark(res, compare.MetricAccuracy, minEffect)
	if worse {
		mark = "worse"
	}
	return []string{name, report.FormatScore(compare.MetricAccuracy, res.Base), report.FormatScore(compare.MetricAccuracy, res.Head),
		report.FormatDelta(compare.MetricAccuracy, res.Delta), report.FormatCI(compare.MetricAccuracy, res.CI),
		strconv.Itoa(rw), strconv.Itoa(wr), mark}
}

// Mark is the verdict as a heading shows it, in words as well as an
// emoji: a system without an emoji font shows pass and fail alike.
func (s Section) Mark() string {
	if s.Failed {
		return "❌ FAIL:"
	}
	return "✅ pass:"
}

func (r *Report) verdictLine() string {
	lim := fmt.Sprintf("limits: bits per byte +%g, accuracy −%g points, each only when significant", r.Limits.BPB, r.Limits.Accuracy)
	if r.Verdict == Pass {
		return "Verdict: pass (" + lim + ")."
	}
	return "Verdict: FAIL: " + strings.Join(r.Reasons, "; ") + " (" + lim + ")."
}

// RenderText writes the audit as a terminal table.
func RenderText(w io.Writer, r *Report) error {
	s := r.Section()
	var b strings.Builder
	b.WriteString(s.Title + "\n" + s.Data + "\n\n")
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	for _, rw := range s.Summary {
		fmt.Fprintln(tw, strings.Join(rw, "\t"))
	}
	tw.Flush()
	b.WriteString("\n" + s.KL + "\n\nProbe Suite flips by type (significantly worse first):\n")
	tw = tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(s.FlipHeader, "\t"))
	for _, t := range s.Types {
		fmt.Fprintln(tw, strings.Join(t.Cells, "\t"))
		for _, l := range t.Levels {
			indented := append([]string{"  " + l[0]}, l[1:]...)
			fmt.Fprintln(tw, strings.Join(indented, "\t"))
		}
	}
	tw.Flush()
	b.WriteString("\n" + s.Verdict + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// RenderMarkdown writes the audit as a section of a PR comment.
func RenderMarkdown(w io.Writer, r *Report) error {
	s := r.Section()
	var b strings.Builder
	fmt.Fprintf(&b, "### %s %s\n\n%s\n\n", s.Mark(), mdEscape(s.Title), mdEscape(s.Data))
	table(&b, s.Summary)
	b.WriteString("\n" + s.KL + "\n\n")
	b.WriteString("Probe Suite flips by type, significantly worse first:\n\n")
	rows := [][]string{s.FlipHeader}
	for _, t := range s.Types {
		cells := t.Cells
		if t.Worse {
			cells = append(cells[:len(cells)-1:len(cells)-1], "**"+cells[len(cells)-1]+"**")
		}
		rows = append(rows, cells)
	}
	table(&b, rows)
	b.WriteString("\n<details><summary>By level</summary>\n\n")
	rows = [][]string{s.LevelHeader}
	for _, t := range s.Types {
		rows = append(rows, t.Levels...)
	}
	table(&b, rows)
	b.WriteString("\n</details>\n\n**" + s.Verdict + "**\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func table(b *strings.Builder, rows [][]string) {
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
