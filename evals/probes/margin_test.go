package probes

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// The byte-normalised margin every surface shows equals a float64
// recomputation from the run records' summed log-probabilities and the
// UTF-8 byte lengths of " " + choice.
func TestMarginRecomputedFromRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set := testSet(t, 4)
	byID := map[string]*Item{}
	for i := range set.Items {
		byID[set.Items[i].ID] = &set.Items[i]
	}
	runs := make([]*runfile.Run, 2)
	sums := make([]Summary, 2)
	for i, seed := range []int64{3, 4} {
		out := filepath.Join(dir, "run"+string(rune('a'+i))+".jsonl")
		opt := runOpts(out, set)
		res, err := Run(context.Background(), testmodel.RandomBigram(seed), opt)
		if err != nil {
			t.Fatal(err)
		}
		if runs[i], err = runfile.ReadFile(out); err != nil {
			t.Fatal(err)
		}
		sums[i] = res.Summary
		if sums[i].MarginCI, sums[i].Variants, err = compare.ProbeStats(runs[i]); err != nil {
			t.Fatal(err)
		}
	}
	// want recomputes the mean margin of one run's records of a type ("" all).
	want := func(r *runfile.Run, typ string) float64 {
		var sum float64
		n := 0
		for _, rec := range r.Items {
			if typ != "" && rec.Type != typ {
				continue
			}
			it := byID[rec.ID]
			per := make([]float64, len(it.Choices))
			for j, c := range it.Choices {
				per[j] = rec.Logprobs[j] / float64(len([]byte(" "+c)))
			}
			best := math.Inf(-1)
			for j, v := range per {
				if j != rec.Answer {
					best = math.Max(best, v)
				}
			}
			sum += per[rec.Answer] - best
			n++
		}
		return sum / float64(n)
	}
	const tol = 1e-12
	for i, s := range sums {
		if s.Margin == nil || math.Abs(*s.Margin-want(runs[i], "")) > tol {
			t.Errorf("run %d: summary margin %v, recomputed %v", i, s.Margin, want(runs[i], ""))
		}
		for typ, v := range s.MarginByType {
			if math.Abs(v-want(runs[i], typ)) > tol {
				t.Errorf("run %d type %s: summary margin %v, recomputed %v", i, typ, v, want(runs[i], typ))
			}
		}
		if len(s.MarginByType) != len(CoreTypes()) {
			t.Errorf("run %d: margin for %d types, want %d", i, len(s.MarginByType), len(CoreTypes()))
		}
		// Its own interval is compare's, and the text says it.
		own, _ := compare.RunMargin(runs[i])
		if ci := s.MarginCI; ci == nil || ci[0] != own.Lo || ci[1] != own.Hi || ci[0] > *s.Margin || ci[1] < *s.Margin {
			t.Errorf("run %d: summary margin interval %v, compare's %+v", i, s.MarginCI, own)
		}
		var text strings.Builder
		if err := s.WriteText(&text); err != nil || !strings.Contains(text.String(), fmt.Sprintf("95%% interval [%.4f, %.4f]", own.Lo, own.Hi)) {
			t.Errorf("run %d: summary text lacks the margin interval (%v):\n%s", i, err, text.String())
		}
	}
	c, err := compare.Runs(runs[0], runs[1], compare.Options{Seed: 1, Resamples: 500})
	if err != nil {
		t.Fatal(err)
	}
	if m := c.Margin; m == nil || math.Abs(m.Base-want(runs[0], "")) > tol || math.Abs(m.Head-want(runs[1], "")) > tol {
		t.Errorf("compare margin %+v, recomputed base %v head %v", c.Margin, want(runs[0], ""), want(runs[1], ""))
	}
	for typ, g := range c.ByGroup {
		if g.Margin == nil || math.Abs(g.Margin.Base-want(runs[0], typ)) > tol || math.Abs(g.Margin.Head-want(runs[1], typ)) > tol {
			t.Errorf("compare margin of %s %+v, recomputed base %v head %v", typ, g.Margin, want(runs[0], typ), want(runs[1], typ))
		}
	}
}
