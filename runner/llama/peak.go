package llama

/*
// The widest float vector this build's flags allow: the FMA peak the
// engine's own kernels can reach, compiled with the same -march.
#if defined(__AVX512F__)
typedef float udgam_vf __attribute__((vector_size(64)));
#else
typedef float udgam_vf __attribute__((vector_size(32)));
#endif

// udgam_fma_loop runs twelve independent fused multiply-add chains (enough
// to cover the FMA latency on every x86 core measured) and returns the
// floating-point operations done. The result is stored so the loop stays.
static double udgam_fma_loop(long iters, float seed, float *sink) {
	udgam_vf b = {0}, c = {0};
	b += 1.0000001f;
	c += 1e-7f;
	// Distinct starting values, so the compiler cannot fold the chains
	// into one.
	udgam_vf a0 = b * seed, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5,
		a6 = a0 + 6, a7 = a0 + 7, a8 = a0 + 8, a9 = a0 + 9, a10 = a0 + 10, a11 = a0 + 11;
	for (long i = 0; i < iters; i++) {
		a0 = a0 * b + c; a1 = a1 * b + c; a2 = a2 * b + c; a3 = a3 * b + c;
		a4 = a4 * b + c; a5 = a5 * b + c; a6 = a6 * b + c; a7 = a7 * b + c;
		a8 = a8 * b + c; a9 = a9 * b + c; a10 = a10 * b + c; a11 = a11 * b + c;
	}
	udgam_vf s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
	*sink = s[0];
	return (double)iters * 12 * (sizeof(udgam_vf) / sizeof(float)) * 2;
}
*/
import "C"

import (
	"sync"
	"time"
)

// fmaPeak measures the machine's float32 fused multiply-add peak on threads
// OS threads at once, in FLOP/s: the anchor BENCHMARKS.md divides the
// engine's useful FLOP/s by. It runs for about iters/1e8 seconds.
func fmaPeak(threads int, iters int64) float64 {
	var wg sync.WaitGroup
	flops := make([]float64, threads)
	start := time.Now()
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sink C.float
			flops[i] = float64(C.udgam_fma_loop(C.long(iters), C.float(i+1), &sink))
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	total := 0.0
	for _, f := range flops {
		total += f
	}
	return total / elapsed
}
