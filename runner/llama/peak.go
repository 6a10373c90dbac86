package llama

// #include "cpu.h"
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
