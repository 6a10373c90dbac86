package report

import (
	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// The byte-normalised margin (compare.Margin) rides beside accuracy: a row
// under the Probe Suite's headline row, a column of the by-type tables and
// a warning when the two disagree. Absent for runs without per-byte scores.

// marginTitle names the margin with its unit.
func marginTitle(s style) string {
	if s.md {
		return "margin, nats per byte ↑"
	}
	return "margin, nats per byte, higher is better"
}

// MarginVerdict words a margin's change: it is shown, never the job's verdict.
func MarginVerdict(m *compare.Margin) string {
	switch {
	case !m.Significant:
		return "no change"
	case m.Delta > 0:
		return "higher"
	}
	return "lower"
}

// MarginDisagreement is the warning for a result whose accuracy and margin
// move in opposite directions; "" when they do not.
func MarginDisagreement(what string, r compare.Result) string {
	m := r.Margin
	if m == nil || !m.Disagrees {
		return ""
	}
	return sprintf("%s: accuracy and margin disagree: accuracy %s points, margin %s nats per byte %s; the two scores rank the runs differently, so neither alone settles it.",
		what, FormatDelta(r.Metric, r.Delta), FormatDelta(m.Metric, m.Delta), FormatCI(m.Metric, m.CI))
}

// addMargin puts the margin's row under the test's headline row and its
// warning under the paired line.
func (v *view) addMargin(c *compare.Comparison, s style) {
	m := c.Margin
	if m == nil {
		return
	}
	verdict := MarginVerdict(m)
	if m.Disagrees {
		verdict += " " + s.warnMark()
	}
	v.Headline.Rows = append(v.Headline.Rows, []string{testTitle(c) + " (" + marginTitle(s) + ")",
		FormatScore(m.Metric, m.Base), FormatScore(m.Metric, m.Head), FormatDelta(m.Metric, m.Delta), FormatCI(m.Metric, m.CI), verdict})
	if w := MarginDisagreement(testTitle(c), c.Result); w != "" {
		v.Paired = append(v.Paired, s.warnMark()+" "+w)
	}
}

// addMarginColumn adds each group's margin change and interval to a
// by-type table whose rows are in key order; nothing when a group lacks it.
func addMarginColumn(t *table, c *compare.Comparison, groups map[string]*compare.Result, s style) {
	if c.Test != runfile.TestProbes || len(groups) == 0 {
		return
	}
	keys := runfile.SortedKeys(groups)
	for _, k := range keys {
		if groups[k].Margin == nil {
			return
		}
	}
	t.Head = append(t.Head, "Margin "+s.delta()+" "+IntervalLabel(c.Confidence))
	t.Right = append(t.Right, true)
	for i, k := range keys {
		m := groups[k].Margin
		cell := FormatDelta(m.Metric, m.Delta) + " " + FormatCI(m.Metric, m.CI)
		if m.Disagrees {
			cell += " " + s.warnMark()
		}
		t.Rows[i] = append(t.Rows[i], cell)
	}
}

// marginLegend explains the margin in the legend when a comparison shows it.
func marginLegend(tests []*compare.Comparison) []string {
	for _, c := range tests {
		if c.Margin != nil {
			return []string{"margin: log-probability per UTF-8 byte of the answer minus that of the best wrong choice (the leading space counted), the mean over items"}
		}
	}
	return nil
}
