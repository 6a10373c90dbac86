package bench

import (
	"math"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// The sample is n core items in the set's order, each type and level
// holding its share of them (within one), and the whole set from 2000 up.
func TestCoreSample(t *testing.T) {
	t.Parallel()
	set, err := probes.Core()
	if err != nil {
		t.Fatal(err)
	}
	size := map[string]int{}
	for _, it := range set.Items {
		size[runfile.LevelKey(it.Type, it.Level)]++
	}
	for _, tt := range []struct {
		env string
		n   int
	}{{"", DefaultItems}, {"105", 105}, {"2000", 2000}, {"5000", 2000}} {
		items, err := CoreSample(func(string) string { return tt.env })
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != tt.n {
			t.Fatalf("UDGAM_BENCH_ITEMS=%q: %d items, want %d", tt.env, len(items), tt.n)
		}
		got := map[string]int{}
		next := 0
		for _, it := range items {
			for next < len(set.Items) && set.Items[next].ID != it.ID {
				next++
			}
			if next == len(set.Items) {
				t.Fatalf("UDGAM_BENCH_ITEMS=%q: item %s is not a core item in the set's order", tt.env, it.ID)
			}
			got[runfile.LevelKey(it.Type, it.Level)]++
		}
		for g, k := range size {
			share := float64(tt.n) * float64(k) / float64(len(set.Items))
			if math.Abs(float64(got[g])-share) >= 1 {
				t.Errorf("UDGAM_BENCH_ITEMS=%q: %d items of %s, want its share %.2f", tt.env, got[g], g, share)
			}
		}
	}
}
