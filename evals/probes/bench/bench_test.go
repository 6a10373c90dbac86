//go:build cgo

package bench

import (
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/evals/probes/probestest"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
)

func coreSample(b *testing.B) []probes.Item {
	items, err := CoreSample(os.Getenv)
	if err != nil {
		b.Fatal(err)
	}
	return items
}

// BenchmarkCore scores the sample three ways and reports the tokens each
// evaluates and their speed: "starts" as udgam-ci scores (each prompt once,
// and the starts of items packed together once, Limits.ShareStarts),
// "shared" each prompt once but every item on its own, "naive" every choice
// as its own full sequence. UDGAM_BENCH_THREADS sets the threads.
func BenchmarkCore(b *testing.B) {
	load := func(eachStart bool) *llama.Model {
		m, err := llama.Load(testmodel.SmolGGUFFor(b), llama.Options{Threads: testmodel.BenchEnv(os.Getenv, "UDGAM_BENCH_THREADS", runtime.NumCPU()), Context: testmodel.BenchEnv(os.Getenv, "UDGAM_BENCH_CONTEXT", 1024),
			PackCells: testmodel.BenchEnv(os.Getenv, "UDGAM_BENCH_PACKCELLS", 0), EachStart: eachStart})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close() })
		return m
	}
	m, plain := load(false), load(true)
	items := coreSample(b)
	info := m.Info()
	counts, err := probestest.CountTokens(m, items, info.HasBOS(), info.BOS, m.Limits())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		model  runner.Model
		tokens int
	}{{"starts", m, counts.Planned}, {"shared", plain, counts.Shared}, {"naive", probestest.NaiveModel{Model: plain}, counts.Naive}} {
		b.Run(bc.name, func(b *testing.B) {
			opt := probes.ScoreOptions{AddBOS: info.HasBOS(), BOS: info.BOS}
			for b.Loop() {
				if err := probes.Score(context.Background(), bc.model, items, opt, func(runfile.Item) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(bc.tokens), "tokens/op")
			b.ReportMetric(float64(bc.tokens*b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(len(items)*b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}
