package compare

import (
	"context"
	"math"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// VariantScore is one prompt variant's accuracy on the items scored in
// every variant, and its paired difference from the published template.
type VariantScore struct {
	Variant  string  `json:"variant"`
	Accuracy float64 `json:"accuracy"` // percent
	// Delta is Accuracy minus the published template's on the same items,
	// in points; CI its paired bootstrap interval (zero for the published).
	Delta float64    `json:"delta"`
	CI    [2]float64 `json:"ci"`
}

// Spread is how much one run's accuracy moves with the wording of the
// prompts: each variant's accuracy on the items every variant scored, the
// range (max − min) and the standard deviation across variants (n−1 in
// the denominator), in points.
type Spread struct {
	Variants []VariantScore `json:"variants"` // the published first
	Items    int            `json:"items"`    // items scored in every variant
	Range    float64        `json:"range"`
	SD       float64        `json:"sd"`
}

// VariantComparison sets each run's spread beside the gap between them:
// when a spread is wider than the gap, which wording was chosen could
// have decided the comparison.
type VariantComparison struct {
	Base *Spread `json:"base,omitempty"` // nil: the run scored no variants
	Head *Spread `json:"head,omitempty"`
	// Gap is |head − base| of the published accuracy, in points.
	Gap float64 `json:"gap"`
	// SpreadExceedsGap: the range of either run exceeds Gap.
	SpreadExceedsGap bool `json:"spread_exceeds_gap"`
}

// RunSpread is a run's spread across its prompt variants; nil when it
// scored none. Intervals use the options' resamples, seed and confidence.
func RunSpread(r *runfile.Run, opts Options) (*Spread, error) {
	return runSpread(context.Background(), r, opts.withDefaults())
}

func runSpread(ctx context.Context, r *runfile.Run, opts Options) (*Spread, error) {
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
	s := &Spread{Items: len(ids)}
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
		vs := VariantScore{Variant: v, Accuracy: est.head, Delta: est.head - est.base}
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
	for _, s := range []*Spread{vc.Base, vc.Head} {
		vc.SpreadExceedsGap = vc.SpreadExceedsGap || s != nil && s.Range > vc.Gap
	}
	return vc, nil
}
