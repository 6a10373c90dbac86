package bench

import (
	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
)

// DefaultItems is how many core items the benchmarks score when
// UDGAM_BENCH_ITEMS is unset (make bench sets 105).
const DefaultItems = 210

// CoreSample is the core items every Probe Suite benchmark scores:
// UDGAM_BENCH_ITEMS of them (read with getenv; DefaultItems when unset,
// the whole set at 2000 or more), each type and level holding its share,
// as `score probes --sample N --seed 1` selects them, in the set's order.
// scripts/llamacpp's anchor scores the same items.
func CoreSample(getenv func(string) string) ([]probes.Item, error) {
	set, err := probes.Core()
	if err != nil {
		return nil, err
	}
	n := testmodel.BenchEnv(getenv, "UDGAM_BENCH_ITEMS", DefaultItems)
	if n >= len(set.Items) {
		return set.Items, nil
	}
	_, idx, err := evals.Select(probes.Keys(set.Items), evals.Selection{Sample: n, Seed: 1})
	if err != nil {
		return nil, err
	}
	items := make([]probes.Item, len(idx))
	for i, j := range idx {
		items[i] = set.Items[j]
	}
	return items, nil
}
