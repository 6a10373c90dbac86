package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// runsView is one test's runs side by side: a column per run.
type runsView struct {
	Title string
	Table table
	Note  string
}

// RenderRunsText writes the summaries of one or more runs side by side as
// aligned text, one table per test.
func RenderRunsText(w io.Writer, runs []*runfile.Run) error {
	views, err := newRunsViews(runs, style{})
	if err != nil {
		return err
	}
	p := &printer{w: w}
	for i, v := range views {
		if i > 0 {
			p.line("")
		}
		p.line(v.Title)
		p.table(v.Table, "  ")
		if v.Note != "" {
			p.line("  " + v.Note)
		}
	}
	return p.err
}

// RenderRunsMarkdown writes the same as RenderRunsText as Markdown tables.
func RenderRunsMarkdown(w io.Writer, runs []*runfile.Run) error {
	views, err := newRunsViews(runs, style{md: true})
	if err != nil {
		return err
	}
	return executeMD(w, "runs", views)
}

func newRunsViews(runs []*runfile.Run, s style) ([]runsView, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("report: no runs")
	}
	var views []runsView
	for _, test := range []string{runfile.TestFresh, runfile.TestProbes} {
		var same []*runfile.Run
		for _, r := range runs {
			if r.Header.Test == test {
				same = append(same, r)
			}
		}
		if len(same) > 0 {
			views = append(views, runsTable(test, same, s))
		}
	}
	return views, nil
}

// runRow is one row of the side-by-side table: a label, the judged
// settings it shows (to flag differences from the first run) and a cell.
type runRow struct {
	label string
	keys  []string
	cell  func(r *runfile.Run) string
}

func runsTable(test string, runs []*runfile.Run, s style) runsView {
	v := runsView{Title: "Fresh Text (bits per byte, lower is better)"}
	if test == runfile.TestProbes {
		v.Title = "Probe Suite (accuracy %, higher is better)"
	}
	fresh := make([]runfile.FreshSummary, len(runs))
	probes := make([]runfile.ProbeSummary, len(runs))
	index := map[*runfile.Run]int{}
	for i, r := range runs {
		index[r] = i
		if test == runfile.TestFresh {
			fresh[i] = runfile.SummarizeFresh(r.Docs)
		} else {
			probes[i] = runfile.SummarizeProbes(r.Items)
		}
	}
	model := func(r *runfile.Run) string {
		label := modelLabel(r.Header.Model.Name, r.Header.Model.Revision)
		if url := hubURL(r.Header.Model.Name, r.Header.Model.Revision); s.md && url != "" {
			return "[" + mdCode(label) + "](" + url + ")"
		}
		return s.code(label)
	}
	rows := []runRow{
		{"Model", nil, model},
		{"Run", nil, func(r *runfile.Run) string { return s.code(r.Header.ID) }},
		{"Git", nil, func(r *runfile.Run) string { return s.cell(gitLabel(r.Header.Git)) }},
		{"Dataset", []string{"dataset.revision", "dataset.sha256"}, func(r *runfile.Run) string {
			d := r.Header.Dataset
			label := modelLabel(d.Name, d.Revision)
			if d.Smoke {
				label += " (smoke sample)"
			}
			return s.cell(label)
		}},
	}
	if test == runfile.TestFresh {
		rows = append(rows,
			runRow{s.bold("Bits per byte"), nil, func(r *runfile.Run) string { return s.bold(FormatScore(compare.MetricBPB, fresh[index[r]].BPB)) }},
			runRow{"Documents", nil, func(r *runfile.Run) string { return recordCount(len(r.Docs), r.Header.Dataset.Count) }},
			runRow{"Tokens", nil, func(r *runfile.Run) string { return FormatCount(fresh[index[r]].Tokens) }},
			runRow{"Bytes", nil, func(r *runfile.Run) string { return FormatCount(fresh[index[r]].Bytes) }},
		)
		for _, g := range groupKeys(fresh, func(f runfile.FreshSummary) map[string]*runfile.FreshGroup { return f.BySource }) {
			rows = append(rows, runRow{"source " + s.cell(runfile.OrNone(g)), nil, func(r *runfile.Run) string {
				if fg := fresh[index[r]].BySource[g]; fg != nil {
					return FormatScore(compare.MetricBPB, fg.BPB) + " (" + FormatCount(fg.Docs) + ")"
				}
				return "-"
			}})
		}
	} else {
		rows = append(rows,
			runRow{s.bold("Accuracy %"), nil, func(r *runfile.Run) string { return s.bold(fmtPct(probes[index[r]].Accuracy)) }},
			runRow{"Items", nil, func(r *runfile.Run) string { return recordCount(len(r.Items), r.Header.Dataset.Count) }},
			runRow{"Chance %", nil, func(r *runfile.Run) string { return fmtPct(probes[index[r]].Chance) }},
			runRow{"Ties", nil, func(r *runfile.Run) string { return FormatCount(probes[index[r]].Ties) }},
		)
		for _, g := range groupKeys(probes, func(p runfile.ProbeSummary) map[string]*runfile.ProbeGroup { return p.ByType }) {
			rows = append(rows, runRow{"type " + s.cell(g), nil, func(r *runfile.Run) string {
				if pg := probes[index[r]].ByType[g]; pg != nil {
					return fmtPct(pg.Accuracy) + " (" + FormatCount(pg.Items) + ")"
				}
				return "-"
			}})
		}
	}
	rows = append(rows,
		runRow{"BOS", []string{"add_bos", "bos_id"}, func(r *runfile.Run) string {
			st := r.Header.Settings
			if !st.AddBOS {
				return "no (" + runfile.OrNone(st.BOSMode) + ")"
			}
			return "yes, id " + strconv.Itoa(int(st.BOSID)) + " (" + runfile.OrNone(st.BOSMode) + ")"
		}},
		runRow{"dtype", []string{"dtype"}, func(r *runfile.Run) string { return s.cell(orDash(r.Header.Settings.Dtype)) }},
		runRow{"Engine", []string{"engine"}, func(r *runfile.Run) string { return s.cell(orDash(r.Header.Settings.Engine)) }},
		runRow{"Tokenizer", []string{"tokenizer_sha256"}, func(r *runfile.Run) string { return s.code(short(r.Header.Settings.TokenizerSHA256)) }},
		runRow{"Contamination", []string{"contamination"}, func(r *runfile.Run) string {
			return s.cell(orDash(runfile.ContaminationKey(r.Header.Contamination)))
		}},
		runRow{"Text preparation", []string{"text_prep"}, func(r *runfile.Run) string { return s.cell(orDash(r.Header.Settings.TextPrep.String())) }},
	)
	if test == runfile.TestFresh {
		rows = append(rows, runRow{"Window / stride", []string{"window", "stride"}, func(r *runfile.Run) string {
			return strconv.Itoa(r.Header.Settings.Window) + " / " + strconv.Itoa(r.Header.Settings.Stride)
		}})
	} else {
		rows = append(rows, runRow{"Formulation", []string{"formulation"}, func(r *runfile.Run) string { return s.cell(orDash(r.Header.Settings.Formulation)) }})
	}

	// A judged setting that differs from the first run's is flagged.
	differs := make([]map[string]bool, len(runs))
	flagged := false
	for i, r := range runs {
		differs[i] = map[string]bool{}
		for _, d := range compare.Classify(runs[0].Header, r.Header) {
			differs[i][d.Key] = d.Refuses()
		}
	}
	mark := "*"
	if s.md {
		mark = "⚠️"
	}
	v.Table.Head = []string{""}
	v.Table.Right = []bool{false}
	for i := range runs {
		v.Table.Head = append(v.Table.Head, "Run "+strconv.Itoa(i+1))
		v.Table.Right = append(v.Table.Right, false)
	}
	for _, row := range rows {
		cells := []string{row.label}
		for i, r := range runs {
			c := row.cell(r)
			for _, k := range row.keys {
				if differs[i][k] {
					c, flagged = c+" "+mark, true
					break
				}
			}
			cells = append(cells, c)
		}
		v.Table.Rows = append(v.Table.Rows, cells)
	}
	if flagged {
		v.Note = mark + " differs from run 1 in a setting that changes results: do not compare these scores directly."
	}
	return v
}

// groupKeys is the sorted union of the runs' group names.
func groupKeys[S, G any](sums []S, groups func(S) map[string]G) []string {
	all := map[string]bool{}
	for _, s := range sums {
		for k := range groups(s) {
			all[k] = true
		}
	}
	return runfile.SortedKeys(all)
}

// recordCount says how many records a run holds, and of how many when it
// holds only part of its dataset (a sample, a shard, an unfinished run).
func recordCount(n, total int) string {
	if total > 0 && n != total {
		return FormatCount(n) + " of " + FormatCount(total)
	}
	return FormatCount(n)
}

func gitLabel(g runfile.Git) string {
	label := g.Repo
	if g.SHA != "" {
		if label != "" {
			label += "@"
		}
		label += g.SHA[:min(7, len(g.SHA))]
	}
	if g.Ref != "" {
		label += " (" + g.Ref + ")"
	}
	if g.PR != nil {
		label += " PR #" + strconv.Itoa(*g.PR)
	}
	return orDash(strings.TrimSpace(label))
}

// short abbreviates a hash for a table cell.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
