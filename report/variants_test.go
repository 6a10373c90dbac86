package report

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// The prompt-variant spread and its warning show on every rendering when
// the spread exceeds the gap between the runs.
func TestVariantWarningOnEverySurface(t *testing.T) {
	t.Parallel()
	base := comparetest.SynthItems(600, 3, 0.5)
	head := comparetest.ShiftItems(base, 50)
	hr := comparetest.ProbeRun("head-v", "udgamlabs/tiny-lm", head)
	hr.Variants = append(comparetest.Variant(head, "reworded", 5), comparetest.Variant(head, "terse", 7)...)
	c := mustCompare(t, comparetest.ProbeRun("base-v", "udgamlabs/tiny-lm", base), hr, compare.Options{MinEffect: defaultMinEffect, Seed: 1, Resamples: 500})
	w := VariantWarning(c)
	if w == "" || !c.Variants.SpreadExceedsGap {
		t.Fatalf("no warning for spread %+v", c.Variants)
	}
	rw := c.Variants.Head.Variants[1]
	for name, render := range map[string]func(io.Writer, Comment) error{"comment": RenderComment, "summary": RenderSummary, "text": RenderText} {
		var b bytes.Buffer
		if err := render(&b, Comment{Tests: []*compare.Comparison{c}}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, want := range []string{w, "Probe Suite: prompt variants", "range (max − min)", runfile.VariantPublished,
			FormatDelta(compare.MetricAccuracy, rw.Delta) + " " + FormatCI(compare.MetricAccuracy, rw.CI)} {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, out)
			}
		}
	}
	// No variants, no section and no warning.
	c = mustCompare(t, comparetest.ProbeRun("base-v", "udgamlabs/tiny-lm", base), comparetest.ProbeRun("head-v", "udgamlabs/tiny-lm", head), compare.Options{MinEffect: defaultMinEffect, Seed: 1, Resamples: 500})
	var b bytes.Buffer
	if err := RenderText(&b, Comment{Tests: []*compare.Comparison{c}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "prompt variants") || VariantWarning(c) != "" {
		t.Error("variants shown for runs that scored none")
	}
}
