// Command gpudata writes what scripts/gpu-check.sh measures on, on the GPU
// machine itself (the models are too large to carry there): random-weight
// float16 models with SmolLM2-135M's and SmolLM2-360M's shapes (the
// benchmarks' byte-level vocabulary, so a document's tokens are its bytes)
// and a seed-sized Fresh Text set, the benchmark's mixed documents (100 B to
// 40 KB), as JSONL for `udgam-ci score fresh --data`. Plain Go, no cgo: the
// bundle carries it compiled.
//
//	go run ./scripts/cuda/gpudata -out DIR [-docs 1670]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
)

// smol360 is SmolLM2-360M's shape (its config.json), beside
// testmodel.SmolShape's 135M.
var smol360 = testmodel.Shape{Layers: 32, Embd: 960, Heads: 15, KVHeads: 5, FFN: 2560, Vocab: 49152, Context: 2048, TiedOutput: true}

func main() {
	out := flag.String("out", "", "folder for smol135m.gguf, smol360m.gguf and docs.jsonl")
	docs := flag.Int("docs", 1670, "mixed documents (the seed's Fresh Text set has 1,670)")
	flag.Parse()
	if *out == "" || *docs < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: gpudata -out DIR [-docs N]")
		os.Exit(2)
	}
	if err := run(*out, *docs); err != nil {
		fmt.Fprintln(os.Stderr, "gpudata:", err)
		os.Exit(1)
	}
}

func run(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, m := range []struct {
		file  string
		seed  int64
		shape testmodel.Shape
	}{
		{"smol135m.gguf", 135, testmodel.SmolShape()},
		{"smol360m.gguf", 360, smol360},
	} {
		model, err := testmodel.RandomLlama(m.seed, m.shape)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, m.file)
		if err := testmodel.WriteLlamaGGUF(path, model, testmodel.WithF16(), testmodel.WithName(m.file[:len(m.file)-5])); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return fresh.WriteJSONL(filepath.Join(dir, "docs.jsonl"), fresh.MixedBenchDocs(n))
}
