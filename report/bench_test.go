package report

import "testing"

// The benchmarks time one comparison at the size of the real tests with
// the default 4,000 resamples (overall and per group). Run them on one
// core: go test -run '^$' -bench Compare -cpu 1 ./report/
func BenchmarkCompareFresh(b *testing.B) {
	docs := synthDocs(1670, 1, 0.95, 0.2)
	base := freshRun("base", "m", docs)
	head := freshRun("head", "m", shifted(synthDocs(1670, 1, 0.95, 0.2), -0.003))
	for b.Loop() {
		if _, err := Compare(base, head, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompareProbes(b *testing.B) {
	bi, hi := pairedItems(2000, 1, 0.44, 0.47)
	base, head := probeRun("base", "m", bi), probeRun("head", "m", hi)
	for b.Loop() {
		if _, err := Compare(base, head, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
