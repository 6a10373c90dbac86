package action

import (
	"context"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// prefetchBaselines gets every test's baseline before the heads are
// scored (until: decided), so each head run can stop once its comparison
// decides; compare then uses the same runs. The map holds every test,
// nil where it has no baseline.
func (r *actionRun) prefetchBaselines(ctx context.Context, scanPath string) (map[string]*runfile.Run, error) {
	bases, err := r.baselinesOnce(ctx, r.in.Tests, scanPath, nil)
	if err != nil {
		return nil, err
	}
	early := map[string]*runfile.Run{}
	for i, test := range r.in.Tests {
		early[test] = bases[i]
	}
	return early, nil
}

// baselinesOnce returns the tests' baselines, fetched (or scored) once: a
// sequential pull request got them before scoring (early, nil when
// not).
func (r *actionRun) baselinesOnce(ctx context.Context, tests []string, scanPath string, early map[string]*runfile.Run) ([]*runfile.Run, error) {
	if early != nil {
		out := make([]*runfile.Run, len(tests))
		for i, t := range tests {
			out[i] = early[t]
		}
		return out, nil
	}
	r.a.Group("Baseline " + r.in.Baseline)
	defer r.a.EndGroup()
	return r.baselines(ctx, tests, scanPath)
}

// sequential is the request to score test until decided; nil to score
// every record: until: all, a push to the base branch, no baseline, or a
// baseline that cannot anchor a sequential run (then said, and the whole
// set is scored). early holds the baselines fetched before scoring.
func (r *actionRun) sequential(test string, early map[string]*runfile.Run) *SequentialRequest {
	base := early[test]
	if base == nil {
		if early != nil {
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
