package compare

import (
	"testing"

	"github.com/udgamlabs/udgam-ci/compare/comparetest"
)

// The benchmarks time one comparison at the size of the real tests with
// the default 4,000 resamples (overall and per group). Run them on one
// core: go test -run '^$' -bench Compare -cpu 1 ./compare/
func BenchmarkCompareFresh(b *testing.B) {
	docs := comparetest.SynthDocs(1670, 1, 0.95, 0.2)
	base := comparetest.FreshRun("base", "m", docs)
	head := comparetest.FreshRun("head", "m", comparetest.Shifted(comparetest.SynthDocs(1670, 1, 0.95, 0.2), -0.003))
	for b.Loop() {
		if _, err := Runs(base, head, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompareProbes(b *testing.B) {
	bi, hi := comparetest.PairedItems(2000, 1, 0.44, 0.47)
	base, head := comparetest.ProbeRun("base", "m", bi), comparetest.ProbeRun("head", "m", hi)
	for b.Loop() {
		if _, err := Runs(base, head, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
