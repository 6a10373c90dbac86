package convert

import (
	"path/filepath"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert/converttest"
)

// BenchmarkConvert converts a 4M-parameter bf16 checkpoint; the params/s
// figure scales to real checkpoints (SmolLM2-135M is 34 times larger).
func BenchmarkConvert(b *testing.B) {
	m := converttest.Llama{Hidden: 256, Intermediate: 1024, Heads: 4, KVHeads: 2, Layers: 4, Dtype: "BF16", Seed: 1}
	src := b.TempDir()
	tensors, err := m.Write(src)
	if err != nil {
		b.Fatal(err)
	}
	var params int
	for _, t := range tensors {
		params += len(t.Values)
	}
	for _, dtype := range Dtypes {
		b.Run(dtype, func(b *testing.B) {
			out := filepath.Join(b.TempDir(), "m.gguf")
			for b.Loop() {
				if _, err := Dir(src, out, Options{Dtype: dtype}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(params)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mparams/s")
		})
	}
}
