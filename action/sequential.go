package action

import (
	"context"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// prefetchBaselines gets every test's baseline before the heads are
// scored (until: decided), so each head run can stop once its comparison
// decides; compare then uses the same runs.
func (r *actionRun) prefetchBaselines(ctx context.Context) error {
	bases, err := r.baselinesOnce(ctx, r.in.Tests)
	if err != nil {
		return err
	}
	r.early = map[string]*runfile.Run{}
	for i, test := range r.in.Tests {
		r.early[test] = bases[i]
	}
	return nil
}

// baselinesOnce returns the tests' baselines, fetched (or scored) once: a
// sequential pull request got them before scoring.
func (r *actionRun) baselinesOnce(ctx context.Context, tests []string) ([]*runfile.Run, error) {
	if r.early != nil {
		out := make([]*runfile.Run, len(tests))
		for i, t := range tests {
			out[i] = r.early[t]
		}
		return out, nil
	}
	r.a.Group("Baseline " + r.in.Baseline)
	defer r.a.EndGroup()
	return r.baselines(ctx, tests)
}

// sequential is the request to score test until decided; nil to score
// every record: until: all, a push to the base branch, no baseline, or a
// baseline that cannot anchor a sequential run (then said, and the whole
// set is scored).
func (r *actionRun) sequential(test string) *SequentialRequest {
	base := r.early[test]
	if base == nil {
		if r.early != nil {
			r.warn("no baseline", "no %s baseline to decide against (until: decided): every record is scored", test)
		}
		return nil
	}
	min := r.compareOptions().MinEffect.Of(test)
	if _, _, err := compare.StartSequential(base, test, sequential.DefaultSeed, compare.DefaultConfidence, min, r.in.Budget); err != nil {
		r.warn("no sequential run", "%s: %v; every record is scored", test, err)
		return nil
	}
	return &SequentialRequest{Baseline: base, Budget: r.in.Budget, MinEffect: max(0, min)}
}
