package server

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/report"
)

// chartPoint is one run on a history chart.
type chartPoint struct {
	Value, Lo, Hi float64
	Base          bool   // on the base branch: joined by the line
	Flagged       bool   // settings differ from its baseline's
	Drifted       bool   // its change since the anchor is beyond the drift budget
	Href          string // the run's page
	Tip           string // tooltip text
	Tick1, Tick2  string // x-axis label lines (date, revision)
}

// chartSpec is a whole chart. Points are in time order.
type chartSpec struct {
	Title  string
	YLabel string
	XLabel string
	Points []chartPoint
	Anchor *chartAnchor // nil: no anchor pinned
}

// chartAnchor is the anchor's score, drawn as a level line, and the limit
// its drift budget sets (HasLimit), drawn as another.
type chartAnchor struct {
	Value, Limit float64
	HasLimit     bool
	Label        string
}

// Chart geometry, in SVG user units; the SVG scales to its container.
const (
	chartW, chartH = 960.0, 360.0
	padL, padR     = 78.0, 44.0
	padT, padB     = 44.0, 78.0
	plotW, plotH   = chartW - padL - padR, chartH - padT - padB
)

const (
	colBase = "#1d4ed8"
	colPR   = "#c2410c"
	colFlag = "#dc2626"
	colAnch = "#047857"
	colDrft = "#7c3aed"
	colGrid = "#e5e7eb"
	colText = "#1f2937"
)

// renderChart draws a history chart as inline SVG: every run a point with
// its 95% interval as a bar, base-branch runs joined by a line, PR runs as
// diamonds, flagged runs ringed in red. No script: tooltips are <title>s
// and each point links to its run.
func renderChart(c chartSpec) template.HTML {
	var b strings.Builder
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %g %g" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg" font-family="system-ui, sans-serif" font-size="13">`,
		chartW, chartH, esc(c.Title))
	fmt.Fprintf(&b, `<title>%s</title><rect width="%g" height="%g" fill="#fff"/>`, esc(c.Title), chartW, chartH)
	legend(&b, c.Anchor != nil)
	c.Points = drawable(c.Points)
	n := len(c.Points)
	if n == 0 {
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle" fill="%s">no runs</text></svg>`, chartW/2, chartH/2, colText)
		return template.HTML(b.String())
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range c.Points {
		lo, hi = math.Min(lo, math.Min(p.Lo, p.Value)), math.Max(hi, math.Max(p.Hi, p.Value))
	}
	if a := c.Anchor; a != nil && finite(a.Value) {
		lo, hi = math.Min(lo, clampChart(a.Value)), math.Max(hi, clampChart(a.Value))
		if a.HasLimit && finite(a.Limit) {
			lo, hi = math.Min(lo, clampChart(a.Limit)), math.Max(hi, clampChart(a.Limit))
		}
	}
	ticks, step := niceTicks(lo, hi, 5)
	ymin, ymax := math.Min(lo, ticks[0]), math.Max(hi, ticks[len(ticks)-1])
	if ymax == ymin {
		ymin, ymax = ymin-1, ymax+1
	}
	y := func(v float64) float64 { return padT + plotH*(1-(v-ymin)/(ymax-ymin)) }
	x := func(i int) float64 { return padL + plotW*(float64(i)+0.5)/float64(n) }

	// Grid and y axis.
	for _, t := range ticks {
		yy := y(t)
		fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="%s"/>`, padL, padL+plotW, yy, yy, colGrid)
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" text-anchor="end" dominant-baseline="middle" fill="%s">%s</text>`,
			padL-8, yy, colText, tickLabel(t, step))
	}
	fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%g" y2="%g" stroke="%s"/>`, padL, padL, padT, padT+plotH, colText)
	fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%g" y2="%g" stroke="%s"/>`, padL, padL+plotW, padT+plotH, padT+plotH, colText)
	fmt.Fprintf(&b, `<text transform="translate(18 %g) rotate(-90)" text-anchor="middle" fill="%s" font-weight="600">%s</text>`,
		padT+plotH/2, colText, esc(c.YLabel))
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle" fill="%s" font-weight="600">%s</text>`,
		padL+plotW/2, chartH-8, colText, esc(c.XLabel))

	// X ticks: a few runs, evenly spread, labelled with date and revision.
	for _, i := range tickIndices(n, 8) {
		p := c.Points[i]
		xx := x(i)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%g" y2="%g" stroke="%s"/>`, xx, xx, padT+plotH, padT+plotH+5, colText)
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle" fill="%s">%s</text>`, xx, padT+plotH+20, colText, esc(p.Tick1))
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle" fill="#6b7280" font-family="ui-monospace, monospace" font-size="11">%s</text>`,
			xx, padT+plotH+36, esc(p.Tick2))
	}

	// The anchor's score and its budget's limit as dashed levels.
	if a := c.Anchor; a != nil && finite(a.Value) {
		level := func(v float64, col, label string) {
			yy := y(clampChart(v))
			fmt.Fprintf(&b, `<line class="anchor" x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="6 4"/>`, padL, padL+plotW, yy, yy, col)
			fmt.Fprintf(&b, `<text x="%g" y="%.1f" text-anchor="end" fill="%s" font-size="11">%s</text>`, padL+plotW-4, yy-4, col, esc(label))
		}
		level(a.Value, colAnch, a.Label)
		if a.HasLimit && finite(a.Limit) {
			level(a.Limit, colDrft, "drift budget")
		}
	}

	// The base branch as a line.
	var line []string
	for i, p := range c.Points {
		if p.Base {
			line = append(line, fmt.Sprintf("%.1f,%.1f", x(i), y(p.Value)))
		}
	}
	if len(line) > 1 {
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round"/>`, strings.Join(line, " "), colBase)
	}

	// Points with their intervals, each a link with a tooltip.
	r := 5.0
	if n > 80 {
		r = 3
	}
	for i, p := range c.Points {
		xx, col := x(i), colBase
		if !p.Base {
			col = colPR
		}
		fmt.Fprintf(&b, `<a href="%s"><title>%s</title>`, esc(p.Href), esc(p.Tip))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-opacity="0.55" stroke-width="1.5"/>`,
			xx, xx, y(p.Lo), y(p.Hi), col)
		if n <= 80 {
			for _, v := range []float64{p.Lo, p.Hi} {
				fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-opacity="0.55" stroke-width="1.5"/>`,
					xx-r, xx+r, y(v), y(v), col)
			}
		}
		yy := y(p.Value)
		if p.Base {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%g" fill="%s"/>`, xx, yy, r, col)
		} else {
			d := r * 1.4
			fmt.Fprintf(&b, `<path d="M%.1f %.1fl%g %gl%g %gl%g %gz" fill="%s" stroke="#fff" stroke-width="1"/>`,
				xx, yy-d, d, d, -d, d, -d, -d, col)
		}
		if p.Flagged {
			fmt.Fprintf(&b, `<circle class="flag" cx="%.1f" cy="%.1f" r="%g" fill="none" stroke="%s" stroke-width="2.5"/>`, xx, yy, r+4, colFlag)
		}
		if p.Drifted {
			d := r + 6
			fmt.Fprintf(&b, `<rect class="drift" x="%.1f" y="%.1f" width="%g" height="%g" fill="none" stroke="%s" stroke-width="2"/>`, xx-d, yy-d, 2*d, 2*d, colDrft)
		}
		b.WriteString(`</a>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// drawable keeps the points a chart can place: a stored run whose score is
// not a number is left off (its table row still shows it), and huge values
// are clamped to the chart's edge.
func drawable(pts []chartPoint) []chartPoint {
	out := make([]chartPoint, 0, len(pts))
	for _, p := range pts {
		if !finite(p.Value) || !finite(p.Lo) || !finite(p.Hi) {
			continue
		}
		p.Value, p.Lo, p.Hi = clampChart(p.Value), clampChart(p.Lo), clampChart(p.Hi)
		out = append(out, p)
	}
	return out
}

func legend(b *strings.Builder, anchor bool) {
	x := padL
	item := func(mark, label string, w float64) {
		fmt.Fprintf(b, `<g transform="translate(%g 20)">%s<text x="14" y="0" dominant-baseline="middle" fill="%s">%s</text></g>`,
			x, mark, colText, label)
		x += w
	}
	item(fmt.Sprintf(`<line x1="-6" x2="8" y1="0" y2="0" stroke="%s" stroke-width="2"/><circle cx="1" cy="0" r="4" fill="%s"/>`, colBase, colBase), "base branch", 130)
	item(fmt.Sprintf(`<path d="M1 -6l6 6l-6 6l-6 -6z" fill="%s"/>`, colPR), "pull request / other ref", 210)
	item(fmt.Sprintf(`<circle cx="1" cy="0" r="6" fill="none" stroke="%s" stroke-width="2.5"/>`, colFlag), "settings differ from baseline", 240)
	item(`<line x1="1" x2="1" y1="-7" y2="7" stroke="#6b7280" stroke-width="1.5"/>`, report.IntervalLabel(compare.ScoreLevel), 120)
	if anchor {
		item(fmt.Sprintf(`<rect x="-6" y="-7" width="14" height="14" fill="none" stroke="%s" stroke-width="2"/>`, colDrft), "beyond the drift budget", 200)
	}
}

// chartLimit bounds the values a chart draws. Scores are small numbers;
// beyond this a value is clamped to the edge, so tick arithmetic (index
// times step) can never overflow.
const chartLimit = 1e300

// maxTicks bounds the ticks of any range: niceTicks never makes more.
const maxTicks = 16

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func clampChart(v float64) float64 { return math.Max(-chartLimit, math.Min(chartLimit, v)) }

// niceTicks picks about want round tick values covering [lo, hi]. It is
// bounded for every input: ticks are computed as integer multiples of the
// step, never by repeated addition (which stalls where the step is below
// the values' precision), and the step is widened until the ticks are
// distinct float64s and at most maxTicks of them. Non-finite bounds are
// the caller's bug; they get the range [0, 1].
func niceTicks(lo, hi float64, want int) ([]float64, float64) {
	want = max(2, min(want, maxTicks/2))
	if !finite(lo) || !finite(hi) {
		lo, hi = 0, 1
	}
	lo, hi = clampChart(min(lo, hi)), clampChart(max(lo, hi))
	// The smallest step whose multiples stay distinct at this magnitude.
	mag := math.Max(math.Abs(lo), math.Abs(hi))
	floor := math.Max(mag*1e-12, math.SmallestNonzeroFloat64*(1<<20))
	if hi-lo < floor*float64(want) { // equal, or closer than float64 can tick
		d := math.Max(math.Max(mag*0.01, 1e-3), floor*float64(want))
		lo, hi = clampChart(lo-d), clampChart(hi+d)
	}
	// hi/n - lo/n rather than (hi-lo)/n: the difference may overflow.
	raw := hi/float64(want-1) - lo/float64(want-1)
	step := niceStep(raw)
	var k0, k1 float64
	for range 64 { // each pass at least doubles the step; a few suffice
		k0, k1 = math.Floor(lo/step), math.Ceil(hi/step)
		if k0*step > lo { // lo/step rounded (an underflowing quotient)
			k0--
		}
		if k1*step < hi {
			k1++
		}
		if k1-k0+1 <= maxTicks && finite(k0*step) && finite(k1*step) {
			break
		}
		step = niceStep(step * 2.01) // the next round step up
	}
	if !(k1-k0+1 <= maxTicks) || !finite(k0*step) || !finite(k1*step) {
		return []float64{lo, hi}, hi - lo // unreachable for clamped input; a bound all the same
	}
	n := int(k1-k0) + 1
	ts := make([]float64, n)
	for i := range ts {
		ts[i] = (k0 + float64(i)) * step
	}
	return ts, step
}

// niceStep rounds raw up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	e := math.Floor(math.Log10(raw))
	mag := math.Pow(10, e)
	if mag == 0 || !finite(mag) { // at the ends of float64's range
		return raw
	}
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return raw
}

// tickLabel prints a tick with as many decimals as the step needs, or in
// exponent form where that would be unreadable.
func tickLabel(t, step float64) string {
	dec := math.Ceil(-math.Log10(step))
	if dec > 12 || step >= 1e15 {
		return strconv.FormatFloat(t, 'g', 6, 64)
	}
	return strconv.FormatFloat(t, 'f', int(math.Max(0, dec)), 64)
}

// tickIndices spreads up to m labels over n points, first and last included.
func tickIndices(n, m int) []int {
	if n <= m {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, m)
	for k := range m {
		out[k] = int(math.Round(float64(k) * float64(n-1) / float64(m-1)))
	}
	return out
}

// sparkline is a small trend line for the index page.
func sparkline(vals []float64, label string) template.HTML {
	const w, h, pad = 120.0, 28.0, 3.0
	var fin []float64
	for _, v := range vals {
		if finite(v) {
			fin = append(fin, clampChart(v))
		}
	}
	vals = fin
	if len(vals) < 2 {
		return ""
	}
	lo, hi := vals[0], vals[0]
	for _, v := range vals {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if hi == lo {
		hi, lo = hi+1, lo-1
	}
	pts := make([]string, len(vals))
	for i, v := range vals {
		pts[i] = fmt.Sprintf("%.1f,%.1f", pad+(w-2*pad)*float64(i)/float64(len(vals)-1), pad+(h-2*pad)*(1-(v-lo)/(hi-lo)))
	}
	return template.HTML(fmt.Sprintf(`<svg class="spark" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="%s"><title>%s</title><polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/></svg>`,
		w, h, w, h, template.HTMLEscapeString(label), template.HTMLEscapeString(label), strings.Join(pts, " "), colBase))
}
