package report

import (
	"strings"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Comment is what a PR comment, a job summary or the terminal report shows:
// the comparisons of one model's runs against a baseline.
type Comment struct {
	// Model names the hidden marker that lets the Action find and update
	// its own comment (see Marker); empty means the first head model.
	Model string
	// Tests holds one comparison per test (fresh text, probes), in the
	// order shown.
	Tests []*compare.Comparison
	// RunURLs optionally link the runs' pages on a report server.
	RunURLs []Link
	// ServerFlags optionally carries the report server's warnings about
	// the runs' settings; they are shown at the top.
	ServerFlags []string
	// Contamination optionally carries what a scan of the training data
	// found among the test items.
	Contamination *Contamination
	// Verdict optionally says what the job concludes under its fail-on
	// setting ("This job fails because ..."); shown under the data lines.
	Verdict string
	// Gate optionally says whose settings judged the pull request and
	// what it tried to loosen (Markdown paragraphs); shown under Verdict.
	Gate []string
	// Anchors optionally holds each test's comparison with the model's
	// anchor run, judged against the drift budget (its MinEffect); shown
	// beside the change against the baseline.
	Anchors []*compare.Comparison
}

// Contamination is shown under the headline: one line, the items found
// (folded), and each affected test compared again without them.
type Contamination struct {
	Line  string                // "0 of 2,000 probe items, ... share a 13-gram with the training data"
	Items []string              // one line per item found
	Clean []*compare.Comparison // per test with items found: the comparison on the others
}

// Link is a labelled URL.
type Link struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

// Marker is the hidden line that identifies udgam-ci's comment for a model,
// so the Action updates its comment rather than adding one per push.
func Marker(model string) string {
	// Keep the HTML comment closed where we mean it to close.
	clean := strings.NewReplacer(">", "", "\n", " ", "\r", " ").Replace(model)
	return "<!-- udgam-ci: model=" + clean + " -->"
}

// table is a rendered table: header, right-aligned columns, cells.
type table struct {
	Title string
	Head  []string
	Right []bool
	Rows  [][]string
	level float64 // of a results table's intervals; 0 when its tests differ
}

// section is a collapsible part of the report.
type section struct {
	Summary string
	Open    bool     // shown expanded
	Lines   []string // before the tables
	Tables  []table
	After   []string // after the tables
}

type modelRef struct{ Label, URL string }

// view is a Comment laid out for one medium (Markdown or plain text).
type view struct {
	Marker   string
	Title    string
	Head     []modelRef
	Base     []modelRef
	Mismatch []string // judged settings that differ, per test
	Flags    []string // the report server's warnings
	Notes    []string
	Data     []string // per test: the data measured
	Verdict  string
	Gate     []string
	Legend   string
	Headline table
	Paired   []string
	Sections []section
	Links    []Link
	Footer   string
}

// style holds what differs between Markdown and plain text.
type style struct {
	md bool
}

func (s style) code(v string) string {
	if s.md {
		return mdCode(v)
	}
	return v
}

func (s style) bold(v string) string {
	if s.md && v != "" {
		return "**" + v + "**"
	}
	return v
}

func (s style) cell(v string) string {
	if s.md {
		return mdCell(v)
	}
	return v
}

func (s style) warnMark() string {
	if s.md {
		return "⚠️"
	}
	return "(!)"
}

// differsMark flags a run's setting that differs from the first run's.
func (s style) differsMark() string {
	if s.md {
		return "⚠️"
	}
	return "*"
}

func (s style) delta() string {
	if s.md {
		return "Δ"
	}
	return "delta"
}

func (s style) arrow() string {
	if s.md {
		return "→"
	}
	return "->"
}

func (s style) verdict(r *compare.Result, mismatch bool) string {
	var v string
	switch {
	case r.TooFew:
		v = "too few to judge"
	case !s.md:
		v = string(r.Verdict)
	case r.Verdict == compare.Improved:
		v = "✅ improved"
	case r.Verdict == compare.Regressed:
		v = "❌ **regressed**"
	default:
		v = "➖ no change"
	}
	if mismatch {
		if s.md {
			v += " ⚠️"
		} else {
			v += " (settings differ)"
		}
	}
	return v
}

func testTitle(c *compare.Comparison) string {
	if c.Test == runfile.TestFresh {
		return "Fresh Text"
	}
	return "Probe Suite"
}

func metricTitle(c *compare.Comparison, s style) string {
	if c.Metric == compare.MetricBPB {
		if s.md {
			return "bits per byte ↓"
		}
		return "bpb, lower is better"
	}
	if s.md {
		return "accuracy % ↑"
	}
	return "accuracy %, higher is better"
}

func recordNoun(c *compare.Comparison, n int) string {
	if c.Test == runfile.TestFresh {
		return plural(n, "document", "documents")
	}
	return plural(n, "item", "items")
}

func newView(cm Comment, s style) view {
	v := view{Title: "udgam-ci evaluation", Links: cm.RunURLs}
	if len(cm.Tests) == 0 {
		return v
	}
	if s.md { // the Markdown views drop it where unwanted
		name := cm.Model
		if name == "" {
			name = cm.Tests[0].HeadRun.Model
		}
		v.Marker = Marker(name)
	}
	v.Headline = resultsTable("", cm.Tests, s)
	for _, c := range cm.Tests {
		v.addTest(c, s)
	}
	v.addAnchors(cm.Tests, cm.Anchors, s)
	v.Flags = cm.ServerFlags
	v.Verdict = s.bold(cm.Verdict)
	v.Gate = cm.Gate
	v.Legend = legend(cm.Tests, s)
	if x := cm.Contamination; x != nil {
		v.Paired = append(v.Paired, s.bold("Contamination:")+" "+x.Line)
		if len(x.Items) > 0 || len(x.Clean) > 0 {
			v.Sections = append(v.Sections, contaminationSection(x, s))
		}
	}
	// Settings that change results and differ come first, expanded.
	if set := settingsSection(cm.Tests, s); set.Open {
		v.Sections = append([]section{set}, v.Sections...)
	} else {
		v.Sections = append(v.Sections, set)
	}
	v.Footer = footer(cm.Tests, s)
	return v
}

// addTest lays out one test's comparison: its models, warnings and notes,
// data line, headline row, paired line, and its group and mover sections.
func (v *view) addTest(c *compare.Comparison, s style) {
	v.Head = addModel(v.Head, c.HeadRun)
	v.Base = addModel(v.Base, c.BaseRun)
	v.Mismatch = append(v.Mismatch, mismatchLines(c, s)...)
	for _, n := range c.Notes {
		v.Notes = append(v.Notes, testTitle(c)+": "+n)
	}
	v.Data = append(v.Data, dataLine(c, s))
	v.Headline.Rows = append(v.Headline.Rows, testRow(c, "", v.Headline.level, s))
	v.Paired = append(v.Paired, pairedLine(c, s))
	v.addMargin(c, s)
	v.addVariants(c, s)
	v.Sections = append(v.Sections, groupSection(c, s))
	if ms := moverSection(c, s); len(ms.Tables) > 0 {
		v.Sections = append(v.Sections, ms)
	}
}

// addModel lists a run's model once: fresh text and probes usually name
// the same models.
func addModel(list []modelRef, r compare.RunRef) []modelRef {
	label := modelLabel(r.Model, r.Revision)
	for _, m := range list {
		if m.Label == label {
			return list
		}
	}
	return append(list, modelRef{Label: label, URL: hubURL(r.Model, r.Revision)})
}

// resultsTable holds one result per test: the headline, or the tests
// compared again without the contaminated items.
// resultsTable is the table of tests' headline results, its interval
// column labelled with their level (compare.Comparison.Level); when the
// tests' levels differ, each cell says its own.
func resultsTable(title string, tests []*compare.Comparison, s style) table {
	level := tests[0].Level()
	for _, c := range tests[1:] {
		if c.Level() != level {
			level = 0
		}
	}
	label := "Interval"
	if level != 0 {
		label = IntervalLabel(level)
	}
	return table{Title: title, Head: []string{"Test", "Base", "Head", s.delta(), label, "Verdict"},
		Right: []bool{false, true, true, true, true, false}, level: level}
}

// testRow is a test's row of a resultsTable; more is added to its label.
func testRow(c *compare.Comparison, more string, level float64, s style) []string {
	cells := resultCells(&c.Result, c.Mismatch, s)
	if c.Sequential != nil {
		cells[3] += " anytime-valid"
	}
	if level == 0 { // the table's tests differ in level: each cell says its own
		cells[3] += " " + fmtFloat(100*c.Level(), 0) + "%"
	}
	return append([]string{testTitle(c) + " (" + metricTitle(c, s) + more + ")"}, cells...)
}

// dataLine names the test data of the head run: name, revision or hash,
// count, and whether it is the smoke sample.
func dataLine(c *compare.Comparison, s style) string {
	h := c.HeadRun
	line := testTitle(c) + " data: " + s.code(orDash(h.Dataset))
	switch {
	case h.DatasetRevision != "":
		line += " at " + s.code(shortRev(h.DatasetRevision))
	case h.DatasetSHA256 != "":
		line += " sha256 " + s.code(short(h.DatasetSHA256))
	}
	n := h.DatasetCount
	if n == 0 {
		n = h.Records
	}
	line += ", " + recordNoun(c, n)
	if h.Smoke {
		line += " — " + s.bold(smokeWarning)
	}
	return line
}

// smokeWarning marks a run of the embedded smoke sample.
const smokeWarning = "smoke sample — not the benchmark"

// legend explains, in one line, the terms the report uses.
func legend(tests []*compare.Comparison, s style) string {
	var parts []string
	fresh, probes, tooFew := false, false, false
	for _, c := range tests {
		fresh = fresh || c.Metric == compare.MetricBPB
		probes = probes || c.Metric == compare.MetricAccuracy
		for _, g := range c.ByGroup {
			tooFew = tooFew || g.TooFew
		}
		for _, g := range c.ByLevel {
			tooFew = tooFew || g.TooFew
		}
	}
	if fresh {
		parts = append(parts, "bpb: bits per byte of text the model never saw, lower is better")
	}
	if probes {
		parts = append(parts, "R"+s.arrow()+"W: items right in base and wrong in head (W"+s.arrow()+"R the reverse)",
			"constant: the accuracy of always giving the same answer, the floor to beat")
	}
	parts = append(parts, marginLegend(tests)...)
	parts = append(parts, "p: two-sided bootstrap p-value of no change")
	if tooFew {
		parts = append(parts, sprintf("too few to judge: fewer than %d shared records, never given a verdict", compare.DefaultMinShared))
	}
	return upperFirst(strings.Join(parts, "; ")) + "."
}

func contaminationSection(x *Contamination, s style) section {
	sec := section{Summary: "Contamination: the test items found in the training data"}
	for _, it := range x.Items {
		sec.Lines = append(sec.Lines, "- "+s.cell(it))
	}
	if len(x.Clean) > 0 {
		t := resultsTable("Without the items found", x.Clean, s)
		for _, c := range x.Clean {
			t.Rows = append(t.Rows, testRow(c, ", "+recordNoun(c, c.N), t.level, s))
		}
		sec.Tables = append(sec.Tables, t)
	}
	return sec
}

// IntervalLabel is every interval's label: "95% interval" for level
// 0.95. Pages, comments and the terminal all label intervals with it,
// from the level the interval was computed at.
func IntervalLabel(level float64) string {
	return fmtFloat(100*level, 0) + "% interval"
}

func resultCells(r *compare.Result, mismatch bool, s style) []string {
	return []string{FormatScore(r.Metric, r.Base), FormatScore(r.Metric, r.Head), FormatDelta(r.Metric, r.Delta),
		FormatCI(r.Metric, r.CI), s.verdict(r, mismatch)}
}

func mismatchLines(c *compare.Comparison, s style) []string {
	var out []string
	for _, d := range c.SettingsDiff {
		if d.Refuses() {
			out = append(out, sprintf("%s: %s %s %s %s", testTitle(c), s.code(d.Key), runfile.OrNone(d.Base), s.arrow(), runfile.OrNone(d.Head)))
		}
	}
	return out
}

func pairedLine(c *compare.Comparison, s style) string {
	line := sprintf("%s: %s paired", testTitle(c), recordNoun(c, c.N))
	if c.OnlyBase > 0 || c.OnlyHead > 0 {
		line += sprintf(" (%s only in base, %s only in head, left out)", FormatCount(c.OnlyBase), FormatCount(c.OnlyHead))
	}
	if r := ReusedLine(c); r != "" {
		line += "; " + r
	}
	if seq := SequentialLine(c); seq != "" {
		line += "; " + seq
	} else {
		line += sprintf("; %s; smallest detectable change %s", FormatP(c.PValue), fmtEffect(c.Metric, c.MDE))
	}
	if c.Flips != nil {
		line += sprintf("; flips: %s right %s wrong, %s wrong %s right",
			FormatCount(c.Flips.RightToWrong), s.arrow(), FormatCount(c.Flips.WrongToRight), s.arrow())
	}
	return line
}

func groupSection(c *compare.Comparison, s style) section {
	sec := section{Summary: testTitle(c) + " by " + c.GroupBy}
	sec.Tables = append(sec.Tables, groupTable(c, c.GroupBy, c.ByGroup, s))
	if w := constantWarning(c, s); w != "" {
		sec.After = append(sec.After, w)
		sec.Open = true
	}
	if len(c.ByLevel) > 0 {
		sec.Summary += " and level"
		sec.Tables = append(sec.Tables, groupTable(c, "type/level", c.ByLevel, s))
	}
	return sec
}

func groupTable(c *compare.Comparison, by string, groups map[string]*compare.Result, s style) table {
	n := "Docs"
	if c.Test == runfile.TestProbes {
		n = "Items"
	}
	t := table{
		Head:  []string{upperFirst(by), n, "Base", "Head", s.delta(), IntervalLabel(c.Confidence), "Verdict"},
		Right: []bool{false, true, true, true, true, true, false},
	}
	if c.Test == runfile.TestProbes {
		t.Head = append(t.Head, "R"+s.arrow()+"W", "W"+s.arrow()+"R")
		t.Right = append(t.Right, true, true)
	}
	floors := by == c.GroupBy && c.Test == runfile.TestProbes && len(c.HeadRun.Constant) > 0
	if floors {
		t.Head = append(t.Head, "Chance", "Constant")
		t.Right = append(t.Right, true, true)
	}
	for _, k := range runfile.SortedKeys(groups) {
		r := groups[k]
		row := append([]string{s.cell(k), FormatCount(r.N)}, resultCells(r, false, s)...)
		if r.Flips != nil {
			row = append(row, FormatCount(r.Flips.RightToWrong), FormatCount(r.Flips.WrongToRight))
		}
		if floors {
			row = append(row, orDash(fmtFloor(c.HeadRun.Chance, k)), orDash(fmtFloor(c.HeadRun.Constant, k)))
			if !beatsConstant(c, k, r) {
				row[len(row)-1] += " " + s.warnMark()
			}
		}
		t.Rows = append(t.Rows, row)
	}
	addMarginColumn(&t, c, groups, s)
	return t
}

func fmtFloor(m map[string]float64, k string) string {
	if v, ok := m[k]; ok {
		return FormatScore(compare.MetricAccuracy, v)
	}
	return ""
}

// beatsConstant tells whether the head's accuracy on type k is above the
// best constant answer's (true where there is none to beat).
func beatsConstant(c *compare.Comparison, k string, r *compare.Result) bool {
	floor, ok := c.HeadRun.Constant[k]
	return !ok || r.Head > floor
}

// constantWarning names the types on which the head does not beat always
// giving the same answer; "" when it beats it on all.
func constantWarning(c *compare.Comparison, s style) string {
	var below []string
	for _, k := range runfile.SortedKeys(c.ByGroup) {
		if r := c.ByGroup[k]; !beatsConstant(c, k, r) {
			below = append(below, sprintf("%s (%s%% ≤ %s%%)", s.cell(k), FormatScore(compare.MetricAccuracy, r.Head), FormatScore(compare.MetricAccuracy, c.HeadRun.Constant[k])))
		}
	}
	if len(below) == 0 {
		return ""
	}
	return s.warnMark() + " The head does not beat always giving the same answer on " + strings.Join(below, ", ") + ": its score there says nothing about what it learned."
}

func upperFirst(v string) string {
	if v == "" {
		return v
	}
	return strings.ToUpper(v[:1]) + v[1:]
}

func moverSection(c *compare.Comparison, s style) section {
	if c.Test == runfile.TestFresh {
		return docMovers(c, s)
	}
	return itemMovers(c, s)
}

// MoverColumns names a mover's base, head and change columns with their
// units: for fresh text each run's bits per byte and the document's share
// of the delta; for probes each run's margin and its change, in nats.
func MoverColumns(test string) (base, head, change string) {
	if test == runfile.TestFresh {
		return "Base bpb", "Head bpb", "Share of Δ (bpb)"
	}
	return "Base margin (nats)", "Head margin (nats)", "Margin change (nats)"
}

// MoverExplained says in a sentence what a mover's numbers are.
func MoverExplained(test string) string {
	if test == runfile.TestFresh {
		return "Share: the document's part of the overall delta (the shares of all documents sum to it)."
	}
	return "Margin: log-probability of the answer minus the best wrong choice, in nats (positive when right)."
}

// FormatMover writes a mover's base, head and change as every surface
// shows them.
func FormatMover(test string, m compare.Mover) (base, head, change string) {
	if test == runfile.TestFresh {
		return FormatScore(compare.MetricBPB, m.Base), FormatScore(compare.MetricBPB, m.Head), fmtFloat(m.Change, 5)
	}
	return fmtFloat(m.Base, 2), fmtFloat(m.Head, 2), fmtSigned(m.Change, 2)
}

func moverRow(test string, m compare.Mover, s style) []string {
	b, h, ch := FormatMover(test, m)
	return []string{s.code(m.ID), s.cell(m.Group), b, h, ch}
}

func docMovers(c *compare.Comparison, s style) section {
	sec := section{Summary: "Fresh Text: documents that moved most", Lines: []string{MoverExplained(c.Test)}}
	b, h, _ := MoverColumns(c.Test)
	head := []string{"Document", "Source", b, h, "Share"}
	right := []bool{false, false, true, true, true}
	for _, part := range []struct {
		title string
		ms    []compare.Mover
	}{{"Worse (bits per byte up)", c.Movers.Worse}, {"Better (bits per byte down)", c.Movers.Better}} {
		if len(part.ms) == 0 {
			continue
		}
		t := table{Title: part.title, Head: head, Right: right}
		for _, m := range part.ms {
			t.Rows = append(t.Rows, moverRow(c.Test, m, s))
		}
		sec.Tables = append(sec.Tables, t)
	}
	return sec
}

func itemMovers(c *compare.Comparison, s style) section {
	sec := section{Summary: "Probe Suite: items that flipped", Lines: []string{MoverExplained(c.Test)}}
	head := []string{"Item", "Type", "Base margin", "Head margin", "Change"}
	right := []bool{false, false, true, true, true}
	for _, part := range []struct {
		title string
		total int
		ms    []compare.Mover
	}{{"Right " + s.arrow() + " wrong", c.Flips.RightToWrong, c.Movers.Worse}, {"Wrong " + s.arrow() + " right", c.Flips.WrongToRight, c.Movers.Better}} {
		if len(part.ms) == 0 {
			continue
		}
		t := table{Title: sprintf("%s (%s of %s)", part.title, FormatCount(len(part.ms)), FormatCount(part.total)), Head: head, Right: right}
		for _, m := range part.ms {
			t.Rows = append(t.Rows, moverRow(c.Test, m, s))
		}
		sec.Tables = append(sec.Tables, t)
	}
	return sec
}

func settingsSection(tests []*compare.Comparison, s style) section {
	sec := section{Summary: "Settings"}
	for _, c := range tests {
		differs := map[string]bool{}
		t := table{Title: testTitle(c), Head: []string{"Setting", "Base", "Head", "Effect"}}
		for _, d := range c.SettingsDiff {
			differs[d.Key] = true
			key, effect := s.code(d.Key), "none: shown, not judged"
			switch {
			case d.Expected:
				effect = "expected: the models differ"
			case d.Judged:
				key, effect = s.bold(key), s.bold("changes results")
				if s.md {
					effect = "⚠️ " + effect
				}
				sec.Summary, sec.Open = "Settings that change results differ", true
			}
			t.Rows = append(t.Rows, []string{key, s.cell(runfile.OrNone(d.Base)), s.cell(runfile.OrNone(d.Head)), effect})
		}
		var same []string
		for _, k := range runfile.JudgedKeys() {
			if !differs[k] {
				same = append(same, s.code(k))
			}
		}
		line := testTitle(c) + ": "
		switch {
		case len(t.Rows) == 0:
			line += "every compared setting is equal"
		case len(same) > 0:
			line += "equal in both runs: " + strings.Join(same, ", ")
		default:
			line += "every setting that changes results differs"
		}
		sec.After = append(sec.After, line+".")
		if len(t.Rows) > 0 {
			sec.Tables = append(sec.Tables, t)
		}
	}
	return sec
}

func footer(tests []*compare.Comparison, s style) string {
	c := tests[0]
	var mins []string
	nouns := "documents or items"
	for _, t := range tests {
		mins = append(mins, FormatMinEffect(t.Metric, t.MinEffect))
	}
	if len(tests) == 1 {
		nouns = strings.TrimPrefix(recordNoun(c, 2), "2 ")
	}
	out := sprintf("Paired bootstrap over the shared %s: %s resamples (seed %d), %s%% percentile intervals, two-sided p-values. "+
		"A change counts when the interval excludes zero and |%s| is at least %s. "+
		"The smallest detectable change is the true change this sample would find 4 times in 5.",
		nouns, FormatCount(c.Resamples), c.Seed, fmtFloat(100*c.Confidence, 0), s.delta(), strings.Join(mins, " / "))
	if seq := sequentialFooter(tests); seq != "" {
		out += " " + seq
	}
	return out
}
