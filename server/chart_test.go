package server

import (
	"flag"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/internal/goldentest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func golden(t *testing.T, name, got string) {
	t.Helper()
	goldentest.Check(t, filepath.Join("testdata", name), []byte(got), *update)
}

func TestChartGolden(t *testing.T) {
	t.Parallel()
	pts := []chartPoint{
		{Value: 0.95, Lo: 0.93, Hi: 0.97, Base: true, Href: "/runs/a", Tip: "a", Tick1: "Nov 1", Tick2: "aaaa"},
		{Value: 0.96, Lo: 0.94, Hi: 0.99, Base: false, Href: "/runs/b", Tip: "b <pr>", Tick1: "Nov 2", Tick2: "bbbb"},
		{Value: 0.93, Lo: 0.91, Hi: 0.95, Base: true, Flagged: true, Href: "/runs/c", Tip: "c", Tick1: "Nov 3", Tick2: "cccc"},
	}
	svg := string(renderChart(chartSpec{Title: "t & t", YLabel: "bits per byte", XLabel: "runs", Points: pts}))
	for _, want := range []string{
		`<polyline points="`, // the base line joins a and c only
		`<circle class="flag"`,
		`b &lt;pr&gt;`, // tooltips are escaped
		`t &amp; t`,
		`>0.90<`, `>1.00<`, // y ticks cover the intervals
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if strings.Count(svg, "<a href=") != 3 || strings.Count(svg, `<path d="M`) != 2 { // one PR diamond + the legend's
		t.Errorf("want 3 linked points and one PR diamond")
	}
	golden(t, "chart.svg", svg)
	if empty := string(renderChart(chartSpec{Title: "none"})); !strings.Contains(empty, "no runs") {
		t.Errorf("empty chart: %s", empty)
	}
}

func TestNiceTicks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lo, hi float64
		step   float64
	}{
		{0.912, 1.071, 0.05},
		{31.2, 58.9, 10},
		{5, 5, 0.025}, // a flat series still gets a range
	}
	for _, tc := range tests {
		ts, step := niceTicks(tc.lo, tc.hi, 5)
		if step != tc.step || ts[0] > tc.lo || ts[len(ts)-1] < tc.hi {
			t.Errorf("niceTicks(%v, %v) = %v step %v; want from <= lo to >= hi, step %v", tc.lo, tc.hi, ts, step, tc.step)
		}
	}
	if got := tickIndices(100, 5); len(got) != 5 || got[0] != 0 || got[4] != 99 {
		t.Errorf("tickIndices(100, 5) = %v", got)
	}
}

// FuzzNiceTicks: for any range, niceTicks ends at once with a few
// distinct, finite, increasing ticks that cover the (clamped) range.
// The seeds include the ranges that once looped forever (a range below
// the values' float64 precision) and those found by fuzzing; the corpus
// under testdata/fuzz/FuzzNiceTicks runs in every go test.
func FuzzNiceTicks(f *testing.F) {
	for _, s := range [][2]float64{
		{1e17, 1e17 + 16}, // the two runs: looped growing a slice
		{1e17, 1e17},
		{0, 0},
		{-0.0, 0},
		{5, 5},
		{0.912, 1.071},
		{1e-320, 2e-320},
		{-1e308, 1e308},
		{math.MaxFloat64, math.MaxFloat64},
		{math.Inf(1), 0},
		{math.NaN(), 1},
		{math.Inf(-1), math.Inf(1)},
		{3, -3},
		{9007199254740992, 9007199254740993},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, lo, hi float64) {
		ts, step := niceTicks(lo, hi, 5)
		if len(ts) < 2 || len(ts) > maxTicks {
			t.Fatalf("niceTicks(%v, %v): %d ticks", lo, hi, len(ts))
		}
		if !(step > 0) || !finite(step) {
			t.Fatalf("niceTicks(%v, %v): step %v", lo, hi, step)
		}
		for i, v := range ts {
			if !finite(v) || i > 0 && !(v > ts[i-1]) {
				t.Fatalf("niceTicks(%v, %v) = %v: not finite and increasing", lo, hi, ts)
			}
		}
		if finite(lo) && finite(hi) {
			a, b := clampChart(min(lo, hi)), clampChart(max(lo, hi))
			if ts[0] > a || ts[len(ts)-1] < b {
				t.Fatalf("niceTicks(%v, %v) = %v does not cover the range", lo, hi, ts)
			}
		}
		if l := tickLabel(ts[0], step); len(l) > 40 {
			t.Fatalf("tick label %q", l)
		}
	})
}

// TestChartHostileValues: a chart of stored runs with any values renders
// quickly to SVG without NaN or Inf in it.
func TestChartHostileValues(t *testing.T) {
	t.Parallel()
	for _, vals := range [][]float64{
		{1e17, 1e17 + 16},
		{math.NaN(), 0.9, math.Inf(1)},
		{math.MaxFloat64, -math.MaxFloat64},
		{0, 0, 0},
		{math.NaN()},
	} {
		var pts []chartPoint
		for _, v := range vals {
			pts = append(pts, chartPoint{Value: v, Lo: v, Hi: v, Base: true})
		}
		svg := string(renderChart(chartSpec{Title: "t", Points: pts}))
		spark := string(sparkline(vals, "s"))
		for _, out := range []string{svg, spark} {
			if strings.Contains(out, "NaN") || strings.Contains(out, "Inf") || len(out) > 64<<10 {
				t.Fatalf("chart of %v: %d bytes, %.300s", vals, len(out), out)
			}
		}
	}
}
