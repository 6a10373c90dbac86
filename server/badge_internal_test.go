package server

import (
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// TestBadgeVerdicts: the colour follows the stored change's verdict under
// the default minimum effect; no stored change, or one against another
// run than the baseline, is grey; a long dataset name is cut.
func TestBadgeVerdicts(t *testing.T) {
	t.Parallel()
	run := func(delta, lo, hi float64, deltaBase string) *store.Run {
		return &store.Run{ID: "r2", Test: runfile.TestFresh, Model: "m", Repo: "o/n", BaselineID: "r1",
			Score:     store.Score{Metric: compare.MetricBPB, Value: 0.9, Lo: 0.89, Hi: 0.91},
			Header:    runfile.Header{Dataset: runfile.Dataset{Name: strings.Repeat("long-name-", 10)}},
			DeltaBase: deltaBase, Delta: delta, DeltaLo: lo, DeltaHi: hi}
	}
	for _, c := range []struct {
		name string
		r    *store.Run
		want compare.Verdict
	}{
		{"lower bpb", run(-0.01, -0.02, -0.005, "r1"), compare.Improved},
		{"higher bpb", run(0.01, 0.005, 0.02, "r1"), compare.Regressed},
		{"interval across zero", run(0.01, -0.001, 0.02, "r1"), compare.NoChange},
		{"under the minimum effect", run(0.001, 0.0005, 0.0015, "r1"), compare.NoChange},
		{"not compared yet", run(0, 0, 0, ""), ""},
		{"compared with another run", run(0.01, 0.005, 0.02, "r0"), ""},
	} {
		b := badgeOf(c.r, "main", nil)
		svg := renderBadge(b)
		if b.Verdict != c.want || !strings.Contains(svg, `fill="`+badgeColours[c.want]+`"`) {
			t.Errorf("%s: verdict %q, want %q:\n%s", c.name, b.Verdict, c.want, svg)
		}
		if !strings.Contains(b.Label, "…") || len([]rune(b.Label)) != 40 {
			t.Errorf("%s: label %q not cut to 40", c.name, b.Label)
		}
	}
	// Since an anchor, the budget is what a drift must exceed to count.
	budget := 0.05
	for _, c := range []struct {
		name  string
		max   *float64
		d     store.AnchorDelta
		want  compare.Verdict
		words string
	}{
		{"within the budget", &budget, store.AnchorDelta{AnchorID: "r0", Delta: 0.03, Lo: 0.02, Hi: 0.04}, compare.NoChange, "drift budget 0.0500"},
		{"beyond the budget", &budget, store.AnchorDelta{AnchorID: "r0", Delta: 0.08, Lo: 0.06, Hi: 0.1}, compare.Regressed, "drift budget 0.0500"},
		{"no budget", nil, store.AnchorDelta{AnchorID: "r0", Delta: 0.03, Lo: 0.02, Hi: 0.04}, compare.Regressed, "no drift budget"},
	} {
		b := badgeOf(run(0.01, 0.005, 0.02, "r1"), "main", &anchorSince{Anchor: store.Anchor{RunID: "r0", MaxDrift: c.max}, Delta: c.d})
		if b.Verdict != c.want || !strings.Contains(b.Value, "since anchor") || !strings.Contains(b.Title, c.words) || !strings.Contains(b.Title, "anchor, run r0") {
			t.Errorf("%s: %+v, want %s", c.name, b, c.want)
		}
	}
}
