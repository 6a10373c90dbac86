package report

import (
	"strings"

	"github.com/udgamlabs/udgam-ci/compare"
)

// AnchorCell is a test's change since the anchor as every surface shows
// it beside the change against main: "+0.0105 [+0.0098, +0.0112]", and
// "beyond the 0.0100 bpb drift budget" when the gate counts it (the
// comparison's MinEffect is the budget, 0 for none).
func AnchorCell(c *compare.Comparison) string {
	cell := FormatDelta(c.Metric, c.Delta) + " " + FormatCI(c.Metric, c.CI)
	if c.Verdict == compare.Regressed {
		cell += " beyond the " + fmtEffect(c.Metric, c.MinEffect) + " drift budget"
	}
	return cell
}

// addAnchors adds the column "Since the anchor" to the headline table
// and a line per test naming the anchor run and its interval.
func (v *view) addAnchors(tests, anchors []*compare.Comparison, s style) {
	if len(anchors) == 0 {
		return
	}
	byTest := map[string]*compare.Comparison{}
	for _, a := range anchors {
		byTest[a.Test] = a
	}
	v.Headline.Head = append(v.Headline.Head, "Since the anchor")
	v.Headline.Right = append(v.Headline.Right, true)
	for i, c := range tests {
		cell := "–"
		if a := byTest[c.Test]; a != nil {
			cell = s.cell(AnchorCell(a))
		}
		v.Headline.Rows[i] = append(v.Headline.Rows[i], cell)
	}
	for _, a := range anchors {
		v.Paired = append(v.Paired, anchorLine(a, s))
		for _, n := range a.Notes {
			v.Notes = append(v.Notes, testTitle(a)+" since the anchor: "+n)
		}
	}
}

// FormatEffect writes a minimum effect or drift budget with its unit:
// "0.0100 bpb", "3.0 points".
func FormatEffect(metric string, v float64) string { return fmtEffect(metric, v) }

// anchorLine names a test's anchor run, its change since it with the
// interval, and the drift budget.
func anchorLine(a *compare.Comparison, s style) string {
	budget := "drift budget " + fmtEffect(a.Metric, a.MinEffect)
	if a.MinEffect == 0 {
		budget = "no drift budget"
	}
	line := sprintf("%s since the anchor (run %s): %s, %s %s; %s",
		testTitle(a), s.code(a.BaseRun.ID), FormatDelta(a.Metric, a.Delta), IntervalLabel(a.Level()), FormatCI(a.Metric, a.CI), budget)
	if a.Verdict == compare.Regressed {
		line += ", " + s.bold("beyond it")
	}
	return line
}

// AnchorMarkdown is the anchor's lines for a job summary that compared
// nothing else (no baseline): one item per test.
func AnchorMarkdown(anchors []*compare.Comparison) string {
	var b strings.Builder
	for _, a := range anchors {
		b.WriteString("\n- " + anchorLine(a, style{md: true}))
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	return b.String()
}
