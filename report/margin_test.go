package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/comparetest"
)

// The margin shows on every rendering: a row under accuracy, a column of
// the by-type table, and the warning when it and accuracy disagree.
func TestMarginOnEverySurface(t *testing.T) {
	t.Parallel()
	bi, hi := comparetest.Disagreeing(280)
	c := mustCompare(t, comparetest.ProbeRun("base-m", "udgamlabs/tiny-lm", bi), comparetest.ProbeRun("head-m", "udgamlabs/tiny-lm", hi), compare.Options{MinEffect: defaultMinEffect, Seed: 1})
	if c.Margin == nil || !c.Margin.Disagrees {
		t.Fatalf("want a disagreeing margin, got %+v", c.Margin)
	}
	m := c.Margin
	renders := map[string]func(*bytes.Buffer) error{
		"comment": func(b *bytes.Buffer) error { return RenderComment(b, Comment{Tests: []*compare.Comparison{c}}) },
		"summary": func(b *bytes.Buffer) error { return RenderSummary(b, Comment{Tests: []*compare.Comparison{c}}) },
		"text":    func(b *bytes.Buffer) error { return RenderText(b, Comment{Tests: []*compare.Comparison{c}}) },
	}
	for name, render := range renders {
		var b bytes.Buffer
		if err := render(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		want := []string{"accuracy and margin disagree", "Margin " + "Δ", "margin, nats per byte", FormatCI(m.Metric, m.CI)}
		if name == "text" {
			want[1] = "Margin delta"
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q in\n%s", name, w, out)
			}
		}
		// The margin's row follows accuracy's in the headline table.
		acc := strings.Index(out, "Probe Suite (accuracy")
		mar := strings.Index(out, "Probe Suite (margin")
		if acc < 0 || mar < acc {
			t.Errorf("%s: the margin row is not under the accuracy row", name)
		}
		if g := c.ByGroup["add"].Margin; g == nil || !strings.Contains(out, FormatDelta(g.Metric, g.Delta)+" "+FormatCI(g.Metric, g.CI)) {
			t.Errorf("%s: the by-type table lacks add's margin %+v", name, g)
		}
	}
}
