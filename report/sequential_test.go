package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// A sequential head run shows, in the comment, the summary and the text,
// how much was scored of how much (records, and the share of the set's
// bytes, which is what scoring costs), why it stopped and the anytime-valid
// interval, the same numbers everywhere.
func TestSequentialOnEverySurface(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(600, 5, 0.95, 0.15)
	base := comparetest.FreshRun("base-s", "udgamlabs/tiny-lm", docs)
	cases := []struct {
		name   string
		shift  float64
		k      int
		reason string
		want   string
	}{
		{"decided", 0.05, 200, sequential.Beyond, "decided after 200 of 600 documents, %s (anytime-valid 95%%): regressed, the whole set's delta is beyond ±0.0020 bpb"},
		{"budget", 0, 120, sequential.Budget, "undecided after 120 of 600 documents, %s, the budget (120) ran out (anytime-valid 95%%): no change larger than ±"},
	}
	for _, tc := range cases {
		head := comparetest.FreshRun("head-s", "udgamlabs/tiny-lm", comparetest.Jittered(comparetest.Shifted(docs, tc.shift), 2, 0.01))
		seq := comparetest.SequentialHead(base, head, tc.k, 0.002)
		c := mustCompare(t, base, seq, compare.Options{MinEffect: defaultMinEffect, Seed: 1})
		scored, all, tokens, allTokens := 0, 0, 0, 0
		for _, d := range seq.Docs {
			scored, tokens = scored+d.Bytes, tokens+d.Tokens
		}
		for _, d := range base.Docs {
			all, allTokens = all+d.Bytes, allTokens+d.Tokens
		}
		if seq.Header.Settings.TokenizerSHA256 != base.Header.Settings.TokenizerSHA256 {
			t.Fatal("the runs' tokenizers differ: the test shows no tokens' share")
		}
		tc.want = fmt.Sprintf(tc.want, fmt.Sprintf("%.1f%% of the set's bytes, %.1f%% of its tokens",
			100*float64(scored)/float64(all), 100*float64(tokens)/float64(allTokens)))
		if c.Sequential == nil || c.Sequential.Reason != tc.reason || c.Sequential.Scored != tc.k {
			t.Fatalf("%s: sequential %+v, want %s after %d", tc.name, c.Sequential, tc.reason, tc.k)
		}
		line := SequentialLine(c)
		if !strings.HasPrefix(line, tc.want) {
			t.Errorf("%s: line %q, want it to start %q", tc.name, line, tc.want)
		}
		// a run over spans counts what it sampled
		spans := *c
		spanSeq := *c.Sequential
		spanSeq.Unit, spans.Sequential = runfile.UnitSpan, &spanSeq
		if got, want := SequentialLine(&spans), strings.Replace(tc.want, "600 documents", "600 spans", 1); !strings.HasPrefix(got, want) {
			t.Errorf("%s over spans: line %q, want it to start %q", tc.name, got, want)
		}
		if tc.reason == sequential.Budget && !strings.HasSuffix(line, fmtEffect(c.Metric, c.Sequential.NoChangeLargerThan())) {
			t.Errorf("%s: line %q does not end with the interval's reach", tc.name, line)
		}
		ci := FormatCI(c.Metric, c.Sequential.CI)
		for _, render := range []func(*bytes.Buffer, Comment) error{
			func(b *bytes.Buffer, cm Comment) error { return RenderComment(b, cm) },
			func(b *bytes.Buffer, cm Comment) error { return RenderSummary(b, cm) },
			func(b *bytes.Buffer, cm Comment) error { return RenderText(b, cm) },
		} {
			var b bytes.Buffer
			if err := render(&b, Comment{Tests: []*compare.Comparison{c}}); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, s := range []string{line, ci + " anytime-valid", "anytime-valid confidence sequence"} {
				if !strings.Contains(out, s) {
					t.Errorf("%s: rendered report lacks %q:\n%s", tc.name, s, out)
				}
			}
		}
	}
}
