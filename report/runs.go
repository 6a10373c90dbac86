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
// settings it shows (to flag differences from the first run) and the cell
// of the i-th run.
type runRow struct {
	label string
	keys  []string
	cell  func(i int, r *runfile.Run) string
}

// runsTable lays one test's runs side by side: who and what was run, the
// test's scores, the settings, the test's own setting last.
func runsTable(test string, runs []*runfile.Run, s style) runsView {
	v := runsView{Title: "Fresh Text (bits per byte, lower is better)"}
	scores, setting := freshRunRows(runs, s)
	if test == runfile.TestProbes {
		v.Title = "Probe Suite (accuracy %, higher is better)"
		scores, setting = probeRunRows(runs, s)
	}
	rows := append(identityRows(s), scores...)
	rows = append(append(rows, settingRows(s)...), setting)
	var flagged bool
	v.Table, flagged = sideBySide(runs, rows, s)
	if flagged {
		v.Note = s.differsMark() + " differs from run 1 in a setting that changes results: do not compare these scores directly."
	}
	return v
}

// identityRows name the model, the run, the commit and the data.
func identityRows(s style) []runRow {
	return []runRow{
		{"Model", nil, func(_ int, r *runfile.Run) string {
			label := modelLabel(r.Header.Model.Name, r.Header.Model.Revision)
			if url := hubURL(r.Header.Model.Name, r.Header.Model.Revision); s.md && url != "" {
				return "[" + mdCode(label) + "](" + url + ")"
			}
			return s.code(label)
		}},
		{"Run", nil, func(_ int, r *runfile.Run) string { return s.code(r.Header.ID) }},
		{"Git", nil, func(_ int, r *runfile.Run) string { return s.cell(gitLabel(r.Header.Git)) }},
		{"Dataset", []string{"dataset.revision", "dataset.sha256"}, func(_ int, r *runfile.Run) string {
			d := r.Header.Dataset
			label := modelLabel(d.Name, d.Revision)
			if d.Smoke {
				label += " (smoke sample)"
			}
			return s.cell(label)
		}},
	}
}

// freshRunRows are fresh text's score rows (bits per byte, counts, each
// source) and its own setting, the window and stride.
func freshRunRows(runs []*runfile.Run, s style) ([]runRow, runRow) {
	sums := make([]runfile.FreshSummary, len(runs))
	for i, r := range runs {
		sums[i] = runfile.SummarizeFresh(r.Docs)
	}
	rows := []runRow{
		{s.bold("Bits per byte"), nil, func(i int, _ *runfile.Run) string { return s.bold(FormatScore(compare.MetricBPB, sums[i].BPB)) }},
		{"Documents", nil, func(_ int, r *runfile.Run) string { return recordCount(len(r.Docs), r.Header.Dataset.Count) }},
		{"Tokens", nil, func(i int, _ *runfile.Run) string { return FormatCount(sums[i].Tokens) }},
		{"Bytes", nil, func(i int, _ *runfile.Run) string { return FormatCount(sums[i].Bytes) }},
	}
	for _, g := range groupKeys(sums, func(f runfile.FreshSummary) map[string]*runfile.FreshGroup { return f.BySource }) {
		rows = append(rows, runRow{"source " + s.cell(runfile.OrNone(g)), nil, func(i int, _ *runfile.Run) string {
			if fg := sums[i].BySource[g]; fg != nil {
				return FormatScore(compare.MetricBPB, fg.BPB) + " (" + FormatCount(fg.Docs) + ")"
			}
			return "-"
		}})
	}
	return rows, runRow{"Window / stride", []string{"window", "stride"}, func(_ int, r *runfile.Run) string {
		return strconv.Itoa(r.Header.Settings.Window) + " / " + strconv.Itoa(r.Header.Settings.Stride)
	}}
}

// probeRunRows are the probe suite's score rows (accuracy, counts, chance,
// ties, each type) and its own setting, the formulation.
func probeRunRows(runs []*runfile.Run, s style) ([]runRow, runRow) {
	sums := make([]runfile.ProbeSummary, len(runs))
	for i, r := range runs {
		sums[i] = runfile.SummarizeProbes(r.Items)
	}
	rows := []runRow{
		{s.bold("Accuracy %"), nil, func(i int, _ *runfile.Run) string { return s.bold(fmtPct(sums[i].Accuracy)) }},
		{"Items", nil, func(_ int, r *runfile.Run) string { return recordCount(len(r.Items), r.Header.Dataset.Count) }},
		{"Chance %", nil, func(i int, _ *runfile.Run) string { return fmtPct(sums[i].Chance) }},
		{"Ties", nil, func(i int, _ *runfile.Run) string { return FormatCount(sums[i].Ties) }},
	}
	for _, g := range groupKeys(sums, func(p runfile.ProbeSummary) map[string]*runfile.ProbeGroup { return p.ByType }) {
		rows = append(rows, runRow{"type " + s.cell(g), nil, func(i int, _ *runfile.Run) string {
			if pg := sums[i].ByType[g]; pg != nil {
				return fmtPct(pg.Accuracy) + " (" + FormatCount(pg.Items) + ")"
			}
			return "-"
		}})
	}
	return rows, runRow{"Formulation", []string{"formulation"}, func(_ int, r *runfile.Run) string { return s.cell(orDash(r.Header.Settings.Formulation)) }}
}

// settingRows are the settings both tests share.
func settingRows(s style) []runRow {
	return []runRow{
		{"BOS", []string{"add_bos", "bos_id"}, func(_ int, r *runfile.Run) string {
			st := r.Header.Settings
			if !st.AddBOS {
				return "no (" + runfile.OrNone(st.BOSMode) + ")"
			}
			return "yes, id " + strconv.Itoa(int(st.BOSID)) + " (" + runfile.OrNone(st.BOSMode) + ")"
		}},
		{"dtype", []string{"dtype"}, func(_ int, r *runfile.Run) string { return s.cell(orDash(r.Header.Settings.Dtype)) }},
		{"Engine", []string{"engine"}, func(_ int, r *runfile.Run) string { return s.cell(orDash(r.Header.Settings.Engine)) }},
		{"Tokenizer", []string{"tokenizer_sha256"}, func(_ int, r *runfile.Run) string { return s.code(short(r.Header.Settings.TokenizerSHA256)) }},
		{"Contamination", []string{"contamination"}, func(_ int, r *runfile.Run) string {
			return s.cell(orDash(runfile.ContaminationKey(r.Header.Contamination)))
		}},
		{"Text preparation", []string{"text_prep"}, func(_ int, r *runfile.Run) string { return s.cell(orDash(r.Header.Settings.TextPrep.String())) }},
	}
}

// sideBySide fills a column per run, marking a judged setting that
// differs from the first run's; flagged says whether any was.
func sideBySide(runs []*runfile.Run, rows []runRow, s style) (t table, flagged bool) {
	differs := make([]map[string]bool, len(runs))
	for i, r := range runs {
		differs[i] = map[string]bool{}
		for _, d := range compare.Classify(runs[0].Header, r.Header) {
			differs[i][d.Key] = d.Refuses()
		}
	}
	t.Head = []string{""}
	t.Right = []bool{false}
	for i := range runs {
		t.Head = append(t.Head, "Run "+strconv.Itoa(i+1))
		t.Right = append(t.Right, false)
	}
	for _, row := range rows {
		cells := []string{row.label}
		for i, r := range runs {
			c := row.cell(i, r)
			for _, k := range row.keys {
				if differs[i][k] {
					c, flagged = c+" "+s.differsMark(), true
					break
				}
			}
			cells = append(cells, c)
		}
		t.Rows = append(t.Rows, cells)
	}
	return t, flagged
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
