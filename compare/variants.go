package compare

import (
	"context"
	"fmt"
	"math"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// VariantComparison sets each run's spread beside the gap between them:
// when a spread is wider than the gap, which wording was chosen could
// have decided the comparison.
type VariantComparison struct {
	Base *runfile.Spread `json:"base,omitempty"` // nil: the run scored no variants
	Head *runfile.Spread `json:"head,omitempty"`
	// Gap is |head − base| of the published accuracy, in points.
	Gap float64 `json:"gap"`
	// SpreadExceedsGap: the range of either run exceeds Gap.
	SpreadExceedsGap bool `json:"spread_exceeds_gap"`
}

// RunSpread is a run's spread across its prompt variants; nil when it
// scored none. Intervals use the options' resamples, seed and confidence.
// `score probes` prints it after scoring.
func RunSpread(r *runfile.Run, opts Options) (*runfile.Spread, error) {
	return runSpread(context.Background(), r, opts.withDefaults())
}

func runSpread(ctx context.Context, r *runfile.Run, opts Options) (*runfile.Spread, error) {
	if len(r.Variants) == 0 {
		return nil, nil
	}
	// correct[variant][item id], the published under its own name.
	correct := map[string]map[string]bool{runfile.VariantPublished: {}}
	names := []string{runfile.VariantPublished}
	for i := range r.Items {
		correct[runfile.VariantPublished][r.Items[i].ID] = r.Items[i].Correct
	}
	for i := range r.Variants {
		it := &r.Variants[i]
		if correct[it.Variant] == nil {
			correct[it.Variant] = map[string]bool{}
			names = append(names, it.Variant)
		}
		correct[it.Variant][it.ItemID()] = it.Correct
	}
	// The items every variant scored, in the run's order.
	var ids []string
	for i := range r.Items {
		id := r.Items[i].ID
		every := true
		for _, v := range names {
			_, ok := correct[v][id]
			every = every && ok
		}
		if every {
			ids = append(ids, id)
		}
	}
	s := &runfile.Spread{Items: len(ids)}
	if len(ids) == 0 {
		return s, nil
	}
	alpha := 1 - opts.Confidence
	accs := make([]float64, len(names))
	for k, v := range names {
		recs := make([]record, len(ids))
		for i, id := range ids {
			recs[i] = record{bn: b2f(correct[runfile.VariantPublished][id]), bd: 1, hn: b2f(correct[v][id]), hd: 1}
		}
		est := estimate(recs, 100)
		vs := runfile.VariantScore{Variant: v, Accuracy: est.head, Delta: est.head - est.base}
		if v != runfile.VariantPublished {
			stats, err := bootstrap(ctx, recs, 100, opts.Resamples, opts.Seed, streamOf("variant "+v), opts.Workers)
			if err != nil {
				return nil, err
			}
			vs.CI = [2]float64{quantile(stats, alpha/2), quantile(stats, 1-alpha/2)}
		}
		s.Variants = append(s.Variants, vs)
		accs[k] = est.head
	}
	lo, hi := accs[0], accs[0]
	for _, a := range accs {
		lo, hi = math.Min(lo, a), math.Max(hi, a)
	}
	s.Range, s.SD = hi-lo, stddev(accs)
	return s, nil
}

// compareVariants is the variant comparison of two runs with published
// accuracy delta; nil when neither scored variants.
func compareVariants(ctx context.Context, base, head *runfile.Run, opts Options, delta float64) (*VariantComparison, error) {
	if len(base.Variants) == 0 && len(head.Variants) == 0 {
		return nil, nil
	}
	vc := &VariantComparison{Gap: math.Abs(delta)}
	var err error
	if vc.Base, err = runSpread(ctx, base, opts); err != nil {
		return nil, err
	}
	if vc.Head, err = runSpread(ctx, head, opts); err != nil {
		return nil, err
	}
	for _, s := range []*runfile.Spread{vc.Base, vc.Head} {
		vc.SpreadExceedsGap = vc.SpreadExceedsGap || s != nil && s.Range > vc.Gap
	}
	return vc, nil
}

// ProbeStats are the statistics a probes run's summary shows beside its
// scores: its margin's own interval (RunMargin; nil without per-byte
// scores) and its spread across prompt variants (RunSpread, default
// options; nil without variants). `score probes` adds them after scoring
// and the report server's run page to a stored run, so both show the same.
func ProbeStats(r *runfile.Run) (marginCI *[2]float64, spread *runfile.Spread, err error) {
	if m, ok := RunMargin(r); ok {
		marginCI = &[2]float64{m.Lo, m.Hi}
	}
	if spread, err = RunSpread(r, Options{}); err != nil {
		return nil, nil, fmt.Errorf("run %s: prompt variants: %w", r.Header.ID, err)
	}
	return marginCI, spread, nil
}
