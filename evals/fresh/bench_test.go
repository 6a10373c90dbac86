package fresh

import (
	"context"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// benchScore scores docs with m and reports scored tokens per second.
func benchScore(b *testing.B, m runner.Model, docs []Document, opt ScoreOptions) {
	b.Helper()
	tokens := 0
	b.ResetTimer()
	for range b.N {
		tokens = 0
		err := Score(context.Background(), m, docs, opt, func(d runfile.Doc) error {
			tokens += d.Tokens
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "scored-tok/s")
}

// BenchmarkScoreBigram measures the scoring loop itself (windows, packing,
// sums) with the pure-Go bigram model, whose cost per token is tiny: it
// bounds the overhead the loop adds to an engine. It says nothing about
// llama.cpp's speed; see BenchmarkFreshLlama (build tag llama).
func BenchmarkScoreBigram(b *testing.B) {
	m := newByteModel(1)
	docs := MixedBenchDocs(300)
	for _, bt := range []struct {
		name  string
		batch int
	}{{"packed", DefaultBatchTokens}, {"one-doc-per-call", 1}} {
		b.Run(bt.name, func(b *testing.B) {
			benchScore(b, m, docs, ScoreOptions{Window: 2048, Stride: 1024, AddBOS: true, BOS: 256, BatchTokens: bt.batch})
		})
	}
}
