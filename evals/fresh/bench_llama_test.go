//go:build llama

// The llama.cpp benchmark needs cgo and the Makefile's flags:
//
//	eval "$(make -s env)"
//	go test -tags llama -run '^$' -bench FreshLlama -benchtime 1x ./evals/fresh/
//
// UDGAM_BENCH_GGUF names the model (default: a random-weight model with
// SmolLM2-135M's shape and a byte-level vocabulary, written once to the
// temp dir), UDGAM_BENCH_THREADS the threads, UDGAM_BENCH_DOCS the number
// of documents (default 300; the test model's tokens are bytes, so the
// mixed set of 100 B to 40 KB is about two million tokens).

package fresh

import (
	"os"
	"runtime"
	"testing"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner/llama"
)

// BenchmarkFreshLlama scores generated documents through llama.cpp: short
// ones (100 B to 2 KB) packed many to a call and one per call, and the
// mixed set (100 B to 40 KB) packed. The KV cache size is part of the
// name: packed sequences share it, and attention runs over all the cells
// in use. Compare scored-tok/s with llama-perplexity on the same text
// with -c 2048, per scored token.
func BenchmarkFreshLlama(b *testing.B) {
	n := testmodel.BenchEnv(os.Getenv, "UDGAM_BENCH_DOCS", 300)
	threads := testmodel.BenchEnv(os.Getenv, "UDGAM_BENCH_THREADS", runtime.NumCPU())
	attention, err := llama.ParseAttention(os.Getenv("UDGAM_BENCH_ATTN"))
	if err != nil {
		b.Fatalf("UDGAM_BENCH_ATTN: %v", err)
	}
	path := testmodel.SmolGGUFFor(b)
	short := GenerateDocs(7, n, 100, 2000)
	// With byte-level tokens, 100-500 bytes is an arXiv abstract's length in
	// a real tokenizer's tokens (about 250).
	tiny := GenerateDocs(9, n, 100, 500)
	mixed := MixedBenchDocs(n)
	for _, bc := range []struct {
		name    string
		docs    []Document
		batch   int
		context int
	}{
		{"tiny/packed/ctx2048", tiny, DefaultBatchTokens, 2048},
		{"tiny/one-doc-per-call/ctx2048", tiny, 1, 2048},
		{"short/packed/ctx4096", short, DefaultBatchTokens, 4096},
		{"short/packed/ctx2048", short, DefaultBatchTokens, 2048},
		{"short/packed-512-per-call/ctx4096", short, 512, 4096},
		{"short/packed-1024-per-call/ctx4096", short, 1024, 4096},
		{"short/one-doc-per-call/ctx2048", short, 1, 2048},
		{"short/one-doc-per-call/ctx4096", short, 1, 4096},
		{"mixed/packed/ctx4096", mixed, DefaultBatchTokens, 4096},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m, err := llama.Load(path, llama.Options{Threads: threads, Context: bc.context, Attention: attention,
				SeparateCaches: os.Getenv("UDGAM_BENCH_SEPARATE") == "1", Parallel: testmodel.BenchEnv(os.Getenv, "UDGAM_BENCH_PARALLEL", 0),
				PackCells: testmodel.BenchEnv(os.Getenv, "UDGAM_BENCH_PACKCELLS", 0)})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			benchScore(b, m, bc.docs, ScoreOptions{Window: 2048, Stride: 1024, AddBOS: true, BOS: m.Info().BOS, BatchTokens: bc.batch})
		})
	}
}
