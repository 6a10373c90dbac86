package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/store"
	"github.com/udgamlabs/udgam-ci/templates"
)

// pages holds one parsed template set per page, each with the layout.
type pages struct {
	byName map[string]*template.Template
	// styleHash is the CSP source of the layout's one inline <style>.
	styleHash string
}

var pageNames = []string{"index", "model", "run", "compare", "audit", "error"}

func loadPages() (*pages, error) {
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templates.FS, "html/layout.html", "html/audit-section.html", "html/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse page template %s: %w", name, err)
		}
		p.byName[name] = t
	}
	layout, err := templates.FS.ReadFile("html/layout.html")
	if err != nil {
		return nil, fmt.Errorf("read layout template: %w", err)
	}
	_, rest, ok := strings.Cut(string(layout), "<style>")
	style, _, ok2 := strings.Cut(rest, "</style>")
	if !ok || !ok2 || strings.Contains(style, "{{") {
		return nil, errors.New("layout template: want one <style> element without template actions (its hash is the page's CSP)")
	}
	if strings.Contains(style, "/*") {
		// html/template drops CSS comments: the style served would not be
		// the one hashed, and browsers would refuse it.
		return nil, errors.New("layout template: no comments inside <style> (html/template strips them, so the CSP hash would not match)")
	}
	sum := sha256.Sum256([]byte(style))
	p.styleHash = "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
	return p, nil
}

// render executes a page into a buffer first, so a template error becomes
// a 500 rather than half a page.
func (s *Server) render(c echo.Context, code int, name string, data any) error {
	t := s.pages.byName[name]
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	return c.HTMLBlob(code, buf.Bytes())
}

var funcs = template.FuncMap{
	"score":          fmtScore,
	"delta":          report.FormatDelta,
	"interval":       fmtInterval,
	"ci":             report.FormatCI,
	"date":           func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") },
	"short":          shortRev,
	"runURL":         runPath,
	"auditURL":       auditPath,
	"modelURL":       client.ModelPath,
	"compareURL":     comparePath,
	"metricName":     metricName,
	"pvalue":         report.FormatP,
	"count":          report.FormatCount,
	"verdictClass":   func(v compare.Verdict) string { return strings.ReplaceAll(string(v), " ", "-") },
	"marginVerdict":  report.MarginVerdict,
	"marginWarning":  report.MarginDisagreement,
	"variantWarning": report.VariantWarning,
	"variantSides":   variantSides,
	"cells":          cells,
	// intervalLabel labels every interval from the level it was
	// computed at; scoreLevel is that of a run's own interval.
	"intervalLabel": report.IntervalLabel,
	"scoreLevel":    func() float64 { return compare.ScoreLevel },
	// points writes a difference of accuracies: "0.4 points", never a
	// percentage of one.
	"points": func(v float64) string { return report.FormatScore(compare.MetricAccuracy, v) + " points" },
}

// cell is a table cell with its column's name, which a phone's card
// layout shows beside it (none for the first, the row's name).
type cell struct{ Label, Text string }

func cells(header, row []string) []cell {
	out := make([]cell, len(row))
	for i, t := range row {
		out[i].Text = t
		if i > 0 && i < len(header) {
			out[i].Label = header[i]
		}
	}
	return out
}

// fmtScore is report's score with the unit pages show: "34.5%".
func fmtScore(metric string, v float64) string {
	if metric != compare.MetricAccuracy {
		return report.FormatScore(metric, v)
	}
	return report.FormatScore(metric, v) + "%"
}

func metricName(metric string) string {
	switch metric {
	case compare.MetricBPB:
		return "bits per byte (lower is better)"
	case compare.MetricMargin:
		return "probe margin, nats per byte (higher is better)"
	}
	return "probe accuracy, % (higher is better)"
}

func shortRev(rev string) string {
	if len(rev) > 10 {
		return rev[:10]
	}
	if rev == "" {
		return "-"
	}
	return rev
}

type errorPage struct {
	Status  int
	Title   string
	Message string
}

// ---- index ----

type indexRow struct {
	store.ModelTest
	Trend     template.HTML
	TrendNote string // why there is no trend line
}

func (s *Server) indexPage(c echo.Context) error {
	ms, err := s.store.Models(c.Request().Context(), s.scope(c), s.cfg.BaseRef, 30, true)
	if err != nil {
		return err
	}
	rows := make([]indexRow, len(ms))
	for i, m := range ms {
		vals := m.Recent
		rows[i] = indexRow{ModelTest: m, Trend: sparkline(vals, fmt.Sprintf("%s (%s) %s on %s: last %d runs", m.Model, m.Repo, m.Test, s.cfg.BaseRef, len(vals)))}
		if rows[i].Trend == "" {
			rows[i].TrendNote = trendNote(len(vals), s.cfg.BaseRef)
		}
	}
	return s.render(c, http.StatusOK, "index", map[string]any{"Rows": rows, "BaseRef": s.cfg.BaseRef})
}

// trendNote says why a row has no trend line: it needs two scored runs
// on the base branch.
func trendNote(runs int, baseRef string) string {
	switch runs {
	case 0:
		return "no runs on " + baseRef + " yet"
	case 1:
		return "1 run on " + baseRef + ": a trend needs 2"
	}
	return "no finite scores on " + baseRef
}

// ---- model history ----

// historyRow is one run in the history table. Its texts are made here
// rather than by template functions: a 1,000-row page renders twice as fast.
type historyRow struct {
	store.Run
	Base       bool
	Delta      string // to the previous base-branch run, "" if none
	DeltaCI    string // its interval, labelled if not at the column's level; "" if not computed at upload
	CompareURL string // with that run, "" if none
	ScoreText  string
	CIText     string
	DateText   string
	RunURL     string
	FlagKeys   string // "engine, window"
	FlagTitle  string // every differing setting with both values
	// AnchorCol: the section has an anchor, so the row shows SinceAnchor
	// (its change since the anchor and interval, "" if none computed);
	// Beyond marks a change beyond the drift budget, IsAnchor the anchor.
	AnchorCol   bool
	SinceAnchor string
	Beyond      bool
	IsAnchor    bool
}

type historySection struct {
	Test   string
	Chart  template.HTML
	Rows   []historyRow // newest first
	Anchor *anchorView  // nil when no anchor is pinned
}

type modelPage struct {
	Repo     string
	Model    string
	BaseRef  string
	Ref      string
	Test     string
	Refs     []string
	Sections []historySection
	Total    int
	// Audits are the model's newest artifact audits.
	Audits []store.Audit
	// DeltaLevel is the level of the changes' intervals (the server's
	// comparisons); a sequential run's says its own.
	DeltaLevel float64
}

// modelPage is /repos/OWNER/NAME/models/MODEL, or the legacy /models/MODEL.
func (s *Server) modelPage(c echo.Context) error {
	ref, err := s.modelOf(c, c.Request().URL.Path, "")
	if err != nil {
		return err
	}
	f, err := filterOf(c)
	if err != nil {
		return err
	}
	data, err := s.history(c, ref, f)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, "model", data)
}

func (s *Server) history(c echo.Context, m modelRef, f store.Filter) (*modelPage, error) {
	ctx := c.Request().Context()
	model := m.Model
	all, err := s.store.ModelRuns(ctx, m.Repo, model, store.Filter{Test: f.Test, Since: f.Since, Brief: true})
	if err != nil {
		return nil, err
	}
	if len(all.Runs) == 0 {
		return nil, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("no runs of model %s in %s", model, m.Repo))
	}
	refs := map[string]bool{}
	byTest := map[string][]store.Run{}
	for i := len(all.Runs) - 1; i >= 0; i-- { // oldest first
		r := all.Runs[i]
		refs[r.Ref] = true
		byTest[r.Test] = append(byTest[r.Test], r)
	}
	p := &modelPage{Repo: m.Repo, Model: model, BaseRef: s.cfg.BaseRef, Ref: f.Ref, Test: f.Test, Refs: runfile.SortedKeys(refs),
		DeltaLevel: compare.DefaultConfidence}
	for _, test := range []string{runfile.TestFresh, runfile.TestProbes} {
		anc, err := s.anchorView(ctx, m, test)
		if err != nil {
			return nil, err
		}
		if sec, ok := s.historySection(model, test, byTest[test], f.Ref, anc); ok {
			p.Total += len(sec.Rows)
			p.Sections = append(p.Sections, sec)
		}
	}
	if p.Audits, err = s.store.ModelAudits(ctx, m.Repo, model); err != nil {
		return nil, err
	}
	return p, nil
}

// historySection is one test's chart and table from its runs, oldest
// first. The ref filter picks what is shown; deltas still use every
// base-branch run, so they do not change with the filter.
func (s *Server) historySection(model, test string, runs []store.Run, ref string, anc *anchorView) (historySection, bool) {
	sec := historySection{Test: test, Anchor: anc}
	var points []chartPoint
	var prev *store.Run // the latest base-branch run so far
	for i := range runs {
		r := &runs[i]
		row := newHistoryRow(r, r.Ref == s.cfg.BaseRef)
		if r.Invalid != "" { // listed, never drawn or used for a delta
			if ref == "" || r.Ref == ref {
				sec.Rows = append(sec.Rows, row)
			}
			continue
		}
		switch {
		case r.Partial != "":
			// A partial run's score is over part of the set: its only
			// change is the one paired with its baseline's same records.
			if r.DeltaBase != "" {
				row.Delta = report.FormatDelta(r.Score.Metric, r.Delta) + " paired"
				row.DeltaCI = report.FormatCI(r.Score.Metric, [2]float64{r.DeltaLo, r.DeltaHi})
				if q := replayOf(r); q != nil {
					row.DeltaCI += " anytime-valid " + report.IntervalLabel(q.Level)
				}
				row.CompareURL = comparePath(r.DeltaBase, r.ID)
			}
		case prev != nil:
			row.Delta = report.FormatDelta(r.Score.Metric, r.Score.Value-prev.Score.Value)
			row.CompareURL = comparePath(prev.ID, r.ID)
			if r.DeltaBase == prev.ID {
				row.DeltaCI = report.FormatCI(r.Score.Metric, [2]float64{r.DeltaLo, r.DeltaHi})
			}
		}
		if row.Base && r.Partial == "" {
			prev = r
		}
		anc.mark(&row)
		if ref != "" && r.Ref != ref {
			continue
		}
		sec.Rows = append(sec.Rows, row)
		points = append(points, chartPoint{
			// A partial run is drawn apart from the base branch's line.
			Value: r.Score.Value, Lo: r.Score.Lo, Hi: r.Score.Hi, Base: row.Base && r.Partial == "", Flagged: r.Flagged(), Drifted: row.Beyond,
			Href: runPath(r.ID), Tip: pointTip(r), Tick1: r.StartedAt.UTC().Format("Jan 2"), Tick2: shortRev(r.Revision),
		})
	}
	if len(sec.Rows) == 0 {
		return sec, false
	}
	reverse(sec.Rows) // the table shows the newest first
	metric := runs[0].Score.Metric
	sec.Chart = renderChart(chartSpec{
		Title:  fmt.Sprintf("%s: %s across revisions", model, metricName(metric)),
		YLabel: metricName(metric),
		XLabel: "runs in time order (date, model revision)",
		Points: points,
		Anchor: anc.chart(),
	})
	return sec, true
}

func newHistoryRow(r *store.Run, base bool) historyRow {
	row := historyRow{
		Run: *r, Base: base, ScoreText: fmtScore(r.Score.Metric, r.Score.Value), CIText: fmtInterval(r.Score),
		DateText: r.StartedAt.UTC().Format("2006-01-02 15:04"), RunURL: runPath(r.ID),
	}
	if r.Invalid != "" {
		row.ScoreText, row.CIText = "invalid", r.Invalid
	}
	if r.Flagged() {
		keys := make([]string, len(r.Flags))
		for i, d := range r.Flags {
			keys[i] = d.Key
		}
		row.FlagKeys, row.FlagTitle = strings.Join(keys, ", "), runfile.FormatDiffs(r.Flags)
	}
	return row
}

func fmtInterval(s store.Score) string { return fmtRange(s.Metric, s.Lo, s.Hi) }

// fmtRange writes a run's own interval of a metric's value.
func fmtRange(metric string, lo, hi float64) string {
	return "[" + fmtScore(metric, lo) + ", " + fmtScore(metric, hi) + "]"
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

func pointTip(r *store.Run) string {
	where := r.Ref
	if r.PR != nil {
		where = fmt.Sprintf("PR #%d (%s)", *r.PR, r.Ref)
	}
	tip := fmt.Sprintf("%s · %s · %s\n%s %s", shortRev(r.Revision), where, r.StartedAt.UTC().Format("2006-01-02 15:04"),
		fmtScore(r.Score.Metric, r.Score.Value), fmtInterval(r.Score))
	if r.Flagged() {
		tip += "\nsettings differ from baseline: " + runfile.FormatDiffs(r.Flags)
	}
	return tip
}

// ---- one run ----

type groupRow struct {
	Name   string
	Count  int
	Score  string
	Margin string // probes: the type's mean byte-normalised margin, "" without
	Extra  string
}

type runPage struct {
	Run *store.Run
	// Replay is a sequential run's stop as this server replayed it.
	Replay *compare.Sequential
	// Audits are the artifact audits of the run's model at its commit.
	Audits []auditView
	// Probes is a probes run's summary as score probes prints it (its
	// margin's interval, its prompt variants), nil with why in NoProbes.
	Probes   *probes.Summary
	NoProbes string
	// MarginText and MarginCIText are its margin and that margin's own
	// interval; VariantRows its prompt variants (report.SpreadRows).
	MarginText, MarginCIText string
	VariantHeader            []string
	VariantRows              [][]string
	Groups                   []groupRow
	Levels                   []groupRow
	GroupBy                  string
	GitURL                   string
	PRURL                    string
	// Partial is how much of its set a partial run scored ("50 of 400
	// documents, sequential"), "" for a whole run.
	Partial string
}

// coverage is a partial run's label with what it counts ("50 of 400
// documents, sequential"), for its own page; "" for a whole run.
func coverage(r *store.Run) string {
	n, rest, _ := strings.Cut(r.Partial, ",")
	if !strings.Contains(n, " of ") {
		return r.Partial
	}
	unit := " items"
	if r.Test == runfile.TestFresh {
		unit = " documents"
	}
	return n + unit + rest
}

func (s *Server) runPage(c echo.Context) error {
	r, err := s.visibleRun(c)
	if err != nil {
		return err
	}
	p := runPage{Run: r, Replay: replayOf(r), Partial: coverage(r)}
	if p.Audits, err = s.commitAudits(c, r); err != nil {
		return err
	}
	if r.Test == runfile.TestFresh {
		var sum runfile.FreshSummary
		if err := json.Unmarshal(r.Summary, &sum); err != nil {
			return fmt.Errorf("run %s summary: %w", r.ID, err)
		}
		p.GroupBy = "source"
		for _, k := range runfile.SortedKeys(sum.BySource) {
			g := sum.BySource[k]
			p.Groups = append(p.Groups, groupRow{Name: k, Count: g.Docs, Score: fmtScore(compare.MetricBPB, g.BPB),
				Extra: fmt.Sprintf("%d tokens, %d bytes", g.Tokens, g.Bytes)})
		}
	} else {
		var sum runfile.ProbeSummary
		if err := json.Unmarshal(r.Summary, &sum); err != nil {
			return fmt.Errorf("run %s summary: %w", r.ID, err)
		}
		p.GroupBy = "type"
		probeRows := func(m map[string]*runfile.ProbeGroup) []groupRow {
			var rows []groupRow
			for _, k := range runfile.SortedKeys(m) {
				g := m[k]
				rows = append(rows, groupRow{Name: k, Count: g.Items, Score: fmtScore(compare.MetricAccuracy, g.Accuracy),
					Extra: fmt.Sprintf("%d correct, chance %s", g.Correct, fmtScore(compare.MetricAccuracy, g.Chance))})
			}
			return rows
		}
		p.Groups, p.Levels = probeRows(sum.ByType), probeRows(sum.ByLevel)
		p.Probes, p.NoProbes = s.probeSummary(c, r)
		if ps := p.Probes; ps != nil && ps.Variants != nil {
			p.VariantHeader = []string{"variant", "accuracy", "Δ vs published", report.IntervalLabel(compare.DefaultConfidence)}
			p.VariantRows = report.SpreadRows(ps.Variants)
		}
		if ps := p.Probes; ps != nil && ps.Margin != nil {
			p.MarginText = report.FormatScore(compare.MetricMargin, *ps.Margin)
			if ci := ps.MarginCI; ci != nil {
				p.MarginCIText = fmtRange(compare.MetricMargin, ci[0], ci[1])
			}
			for i := range p.Groups {
				if m, ok := ps.MarginByType[p.Groups[i].Name]; ok {
					p.Groups[i].Margin = report.FormatScore(compare.MetricMargin, m)
				}
			}
		}
	}
	if r.Repo != "" && r.SHA != "" {
		p.GitURL = "https://github.com/" + r.Repo + "/commit/" + r.SHA
	}
	if r.Repo != "" && r.PR != nil {
		p.PRURL = fmt.Sprintf("https://github.com/%s/pull/%d", r.Repo, *r.PR)
	}
	return s.render(c, http.StatusOK, "run", p)
}

// ---- compare ----

type compareGroup struct {
	Name string
	*compare.Result
	// Probe types: the floors a score must beat, as the comment shows them.
	Chance, Constant string
	Below            bool // the head does not beat the constant answer
}

type comparePage struct {
	C      *compare.Comparison
	Base   *store.Run
	Head   *store.Run
	Groups []compareGroup
	Levels []compareGroup
	Judged []compare.SettingDiff
	Other  []compare.SettingDiff
	// The movers, formatted as in the comment, with their columns' names.
	Movers                         []moverRow
	MoverBase, MoverHead, MoverChg string
	MoverNote                      string
	// Sequential is report.SequentialLine: how a sequential head run stopped.
	Sequential string
	// Reused is report.ReusedLine: the head's model was unchanged, nothing scored.
	Reused string
	// What was measured, and the warnings the comment gives with it.
	DataLine        string
	Smoke           string // which run scored the smoke sample, "" if neither
	SmokeWarning    string
	ConstantWarning string
	Floors          bool // the by-type table has chance and constant columns
	Flips           bool // the group tables have flip columns (probes)
}

type moverRow struct {
	Dir, Class, ID, Group, Base, Head, Change string
}

func (s *Server) comparePage(c echo.Context) error {
	cmp, base, head, err := s.compare(c, c.QueryParam("base"), c.QueryParam("head"))
	if err != nil {
		return err
	}
	p := comparePage{C: cmp, Base: base, Head: head, DataLine: report.DataLine(cmp), SmokeWarning: report.SmokeWarning,
		ConstantWarning: report.ConstantWarning(cmp), Flips: cmp.Flips != nil,
		Sequential: report.SequentialLine(cmp), Reused: report.ReusedLine(cmp)}
	switch {
	case cmp.BaseRun.Smoke && cmp.HeadRun.Smoke:
		p.Smoke = "Both runs"
	case cmp.BaseRun.Smoke:
		p.Smoke = "The base run"
	case cmp.HeadRun.Smoke:
		p.Smoke = "The head run"
	}
	for _, k := range runfile.SortedKeys(cmp.ByGroup) {
		g := compareGroup{Name: k, Result: cmp.ByGroup[k]}
		if cmp.Test == runfile.TestProbes {
			g.Chance, g.Constant, g.Below = report.Floors(cmp, k)
			p.Floors = p.Floors || g.Constant != ""
		}
		p.Groups = append(p.Groups, g)
	}
	for _, k := range runfile.SortedKeys(cmp.ByLevel) {
		p.Levels = append(p.Levels, compareGroup{Name: k, Result: cmp.ByLevel[k]})
	}
	p.MoverBase, p.MoverHead, p.MoverChg = report.MoverColumns(cmp.Test)
	p.MoverNote = report.MoverExplained(cmp.Test)
	for _, part := range []struct {
		dir, class string
		ms         []compare.Mover
	}{{"worse", "regressed", cmp.Movers.Worse}, {"better", "improved", cmp.Movers.Better}} {
		for _, m := range part.ms {
			b, h, ch := report.FormatMover(cmp.Test, m)
			p.Movers = append(p.Movers, moverRow{Dir: part.dir, Class: part.class, ID: m.ID, Group: m.Group, Base: b, Head: h, Change: ch})
		}
	}
	for _, d := range cmp.SettingsDiff {
		if d.Judged && !d.Expected {
			p.Judged = append(p.Judged, d)
		} else {
			p.Other = append(p.Other, d)
		}
	}
	return s.render(c, http.StatusOK, "compare", p)
}
