package testmodel

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/udgamlabs/udgam-ci/runner"
)

// BenchmarkWriteSmolGGUF measures writing the benchmark model (SmolLM2-135M's
// shape, random weights) as the engine's benchmarks do before timing.
func BenchmarkWriteSmolGGUF(b *testing.B) {
	m, err := RandomLlama(1, SmolShape())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		opts []WriteOption
	}{{"f16", []WriteOption{WithF16()}}, {"f32", nil}} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "smol.gguf")
			for b.Loop() {
				if err := WriteLlamaGGUF(path, m, bc.opts...); err != nil {
					b.Fatal(err)
				}
			}
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.Size())/1e6, "MB")
		})
	}
}

// BenchmarkLlamaScore measures the Go reference forward pass on the default
// shape: one 256-token sequence, every position scored.
func BenchmarkLlamaScore(b *testing.B) {
	m, err := RandomLlama(1, DefaultShape())
	if err != nil {
		b.Fatal(err)
	}
	br := runner.Branch{Tokens: make([]int32, 256)}
	for p := range br.Tokens {
		br.Tokens[p] = int32(p)
		if p > 0 {
			br.Positions = append(br.Positions, p)
		}
	}
	reqs := []runner.Request{{Branches: []runner.Branch{br}}}
	for b.Loop() {
		if _, err := m.Score(context.Background(), reqs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(br.Tokens)*b.N)/b.Elapsed().Seconds(), "tokens/s")
}
