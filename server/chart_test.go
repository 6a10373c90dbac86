package server

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs from the golden file; run go test ./server -run %s -update and review the diff", name, t.Name())
	}
}

func TestChartGolden(t *testing.T) {
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
