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
		b := badgeOf(c.r, "main")
		svg := renderBadge(b)
		if b.Verdict != c.want || !strings.Contains(svg, `fill="`+badgeColours[c.want]+`"`) {
			t.Errorf("%s: verdict %q, want %q:\n%s", c.name, b.Verdict, c.want, svg)
		}
		if !strings.Contains(b.Label, "…") || len([]rune(b.Label)) != 40 {
			t.Errorf("%s: label %q not cut to 40", c.name, b.Label)
		}
	}
}
