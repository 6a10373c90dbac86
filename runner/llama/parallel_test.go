//go:build cgo

package llama

import (
	"sync/atomic"
	"testing"
)

func TestForEachParallelCallsEachIndexOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, workers int }{{0, 2}, {1, 2}, {5, 1}, {5, 2}, {7, 3}, {3, 8}} {
		calls := make([]int32, tc.n)
		forEachParallel(tc.n, tc.workers, func(k int) { atomic.AddInt32(&calls[k], 1) })
		for k, c := range calls {
			if c != 1 {
				t.Errorf("n=%d workers=%d: index %d called %d times", tc.n, tc.workers, k, c)
			}
		}
	}
}
