//go:build cgo

package llama

import (
	"context"
	"os"
	"runtime"
	"syscall"
	"testing"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
)

func benchTokens(n int, seed int32) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = (seed*7919 + int32(i)*104729) % 49152
	}
	return s
}

func allPositions(n int) []int {
	p := make([]int, n-1)
	for i := range p {
		p[i] = i + 1
	}
	return p
}

// benchOptions lets one run try other engine settings, e.g.
// UDGAM_BENCH_KVF16=1 UDGAM_BENCH_BATCH=2048 UDGAM_BENCH_ATTN=unfused.
func benchOptions(o Options) Options {
	o.Threads = testmodel.BenchEnv(os.Getenv, "UDGAM_BENCH_THREADS", runtime.NumCPU())
	o.KVF16 = os.Getenv("UDGAM_BENCH_KVF16") == "1"
	a, err := ParseAttention(os.Getenv("UDGAM_BENCH_ATTN"))
	if err != nil {
		panic("UDGAM_BENCH_ATTN: " + err.Error())
	}
	o.Attention = a
	o.Batch = testmodel.BenchEnv(os.Getenv, "UDGAM_BENCH_BATCH", o.Batch)
	return o
}

func runScoreBench(b *testing.B, opts Options, reqs []runner.Request) {
	opts = benchOptions(opts)
	m, err := Load(testmodel.SmolGGUFFor(b), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	tokens := 0
	for _, r := range reqs {
		tokens += len(r.Prefix)
		for _, br := range r.Branches {
			tokens += len(br.Tokens)
		}
	}
	// Warm up: page in the weights.
	if _, err := m.Score(context.Background(), reqs[:1]); err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuSeconds(b)
	b.ResetTimer()
	for range b.N {
		if _, err := m.Score(context.Background(), reqs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tokens*b.N)/b.Elapsed().Seconds(), "tokens/s")
	// Per second of this process's CPU time: on one thread and a shared
	// machine, the rate while it ran (ggml's threads spin at barriers, so
	// with more it counts waiting too).
	b.ReportMetric(float64(tokens*b.N)/(cpuSeconds(b)-cpu0), "tokens/cpu-s")
	// The FMA peak on the same threads right after, so the fraction below
	// compares the engine with this machine as it is now.
	flops := runner.FLOPs(testmodel.SmolShape().Dims(), reqs, m.Limits()) * float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(flops/1e9, "GFLOP/s")
	b.ReportMetric(flops/fmaPeak(opts.Threads, 2e8), "peak-fraction")
}

// cpuSeconds is the CPU time this process has used, user and system.
func cpuSeconds(b *testing.B) float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return float64(u.Utime.Nano()+u.Stime.Nano()) / 1e9
}

// BenchmarkFMAPeak is the anchor alone: the float32 FMA peak of this build
// on the benchmark's threads.
func BenchmarkFMAPeak(b *testing.B) {
	threads := benchOptions(Options{}).Threads
	var peak float64
	for range b.N {
		peak = fmaPeak(threads, 2e8)
	}
	b.ReportMetric(peak/1e9, "GFLOP/s")
}

// BenchmarkSmolSeq2048 scores one 2,048-token sequence with a log-probability
// at every position: compare with llama-bench -p 2048 -n 0.
func BenchmarkSmolSeq2048(b *testing.B) {
	seq := benchTokens(2048, 1)
	reqs := []runner.Request{{Branches: []runner.Branch{{Tokens: seq, Positions: allPositions(len(seq))}}}}
	runScoreBench(b, Options{Context: 2048, Batch: DefaultBatch, Parallel: 1}, reqs)
}

// BenchmarkSmolSeq64 scores one 64-token sequence with a log-probability at
// every position: the rate BenchmarkSmolSeq2048's is measured against
// (attention's share grows with the window).
func BenchmarkSmolSeq64(b *testing.B) {
	seq := benchTokens(64, 1)
	reqs := []runner.Request{{Branches: []runner.Branch{{Tokens: seq, Positions: allPositions(len(seq))}}}}
	runScoreBench(b, Options{Context: 2048, Batch: DefaultBatch, Parallel: 1}, reqs)
}

// BenchmarkSmolPacked16x128 scores 16 sequences of 128 tokens packed together.
func BenchmarkSmolPacked16x128(b *testing.B) {
	var reqs []runner.Request
	for i := range 16 {
		seq := benchTokens(128, int32(i+2))
		reqs = append(reqs, runner.Request{Branches: []runner.Branch{{Tokens: seq, Positions: allPositions(len(seq))}}})
	}
	runScoreBench(b, Options{Context: 2048, Batch: DefaultBatch, Parallel: 16}, reqs)
}

// BenchmarkSmolSeq2048LastLogit asks for one log-probability at the end, as
// llama-bench's prompt processing does: the anchor's own workload.
func BenchmarkSmolSeq2048LastLogit(b *testing.B) {
	seq := benchTokens(2048, 1)
	reqs := []runner.Request{{Branches: []runner.Branch{{Tokens: seq, Positions: []int{len(seq) - 1}}}}}
	runScoreBench(b, Options{Context: 2048, Batch: DefaultBatch, Parallel: 1}, reqs)
}
