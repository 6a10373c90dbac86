package report

import (
	"strings"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Prompt variants (compare.VariantComparison) ride beside the headline: a
// warning when a run's spread across wordings is wider than the gap
// between the runs, and a section with each variant's accuracy.

// VariantWarning says that the spread of either run exceeds the gap
// between them; "" when it does not or no variants were scored.
func VariantWarning(c *compare.Comparison) string {
	v := c.Variants
	if v == nil || !v.SpreadExceedsGap {
		return ""
	}
	var parts []string
	for _, side := range []struct {
		name string
		s    *runfile.Spread
	}{{"base", v.Base}, {"head", v.Head}} {
		if side.s != nil {
			parts = append(parts, sprintf("%s's by %s points", side.name, FormatScore(compare.MetricAccuracy, side.s.Range)))
		}
	}
	return sprintf("%s: across prompt wordings the accuracy moves (max − min) %s, more than the %s-point gap between the runs: which wording was chosen could decide this comparison.",
		testTitle(c), strings.Join(parts, " and "), FormatScore(compare.MetricAccuracy, v.Gap))
}

// addVariants puts the warning under the paired line and the variants'
// section among the sections, open when the warning fires.
func (v *view) addVariants(c *compare.Comparison, s style) {
	vc := c.Variants
	if vc == nil {
		return
	}
	if w := VariantWarning(c); w != "" {
		v.Paired = append(v.Paired, s.warnMark()+" "+w)
	}
	v.Sections = append(v.Sections, variantSection(c, s))
}

// variantRows lays out each variant's accuracy and its paired difference
// from the published template for base and head, then the range and the
// standard deviation: the rows every surface shows.
func variantRows(vc *compare.VariantComparison, s style) [][]string {
	var names []string
	seen := map[string]bool{}
	for _, sp := range []*runfile.Spread{vc.Base, vc.Head} {
		if sp == nil {
			continue
		}
		for _, x := range sp.Variants {
			if !seen[x.Variant] {
				seen[x.Variant] = true
				names = append(names, x.Variant)
			}
		}
	}
	cells := func(sp *runfile.Spread, name string) []string {
		if sp != nil {
			for i, x := range sp.Variants {
				if x.Variant != name {
					continue
				}
				if i == 0 {
					return []string{fmtPct(x.Accuracy), "-"}
				}
				return []string{fmtPct(x.Accuracy), FormatDelta(compare.MetricAccuracy, x.Delta) + " " + FormatCI(compare.MetricAccuracy, x.CI)}
			}
		}
		return []string{"-", "-"}
	}
	var rows [][]string
	for _, n := range names {
		rows = append(rows, append(append([]string{s.cell(n)}, cells(vc.Base, n)...), cells(vc.Head, n)...))
	}
	stat := func(sp *runfile.Spread, f func(*runfile.Spread) float64) string {
		if sp == nil {
			return "-"
		}
		return fmtPct(f(sp))
	}
	for _, st := range []struct {
		label string
		f     func(*runfile.Spread) float64
	}{{"range (max − min)", func(sp *runfile.Spread) float64 { return sp.Range }}, {"standard deviation", func(sp *runfile.Spread) float64 { return sp.SD }}} {
		rows = append(rows, []string{st.label, stat(vc.Base, st.f), "", stat(vc.Head, st.f), ""})
	}
	return rows
}

func variantSection(c *compare.Comparison, s style) section {
	vc := c.Variants
	sec := section{Summary: testTitle(c) + ": prompt variants", Open: vc.SpreadExceedsGap,
		Lines: []string{sprintf("Accuracy %% under each wording of the prompts, on the items every variant scored; %s: the paired difference from the published template. The headline is the published template's.", s.delta())}}
	ci := IntervalLabel(c.Confidence)
	t := table{Head: []string{"Variant", "Base", "Base " + s.delta() + " " + ci, "Head", "Head " + s.delta() + " " + ci},
		Right: []bool{false, true, true, true, true}, Rows: variantRows(vc, s)}
	sec.Tables = append(sec.Tables, t)
	sec.After = append(sec.After, sprintf("Gap between the runs (published): %s points.", FormatScore(compare.MetricAccuracy, vc.Gap)))
	return sec
}

// SpreadRows are one run's prompt variants as the run page shows them:
// each variant's accuracy %, its paired difference from the published
// template and that difference's interval ("-" for the published), then
// the range and the standard deviation in points.
func SpreadRows(sp *runfile.Spread) [][]string {
	var rows [][]string
	for i, x := range sp.Variants {
		if i == 0 {
			rows = append(rows, []string{x.Variant, fmtPct(x.Accuracy), "-", "-"})
			continue
		}
		rows = append(rows, []string{x.Variant, fmtPct(x.Accuracy), FormatDelta(compare.MetricAccuracy, x.Delta), FormatCI(compare.MetricAccuracy, x.CI)})
	}
	rows = append(rows, []string{"range (max − min)", fmtPct(sp.Range), "", ""},
		[]string{"standard deviation", fmtPct(sp.SD), "", ""})
	return rows
}
