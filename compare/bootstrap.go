package compare

import (
	"context"
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/udgamlabs/udgam-ci/internal/splitmix"
)

// chunkSize resamples share one random stream. Streams depend only on the
// seed, the group and the chunk's index, never on which worker runs the
// chunk, so parallel and serial resampling give the same numbers.
const chunkSize = 250

// quad is a record's four sums, packed for the resampling loop.
type quad struct{ bn, bd, hn, hd float64 }

// bootstrap returns the sorted paired-bootstrap distribution of
// scale·(Σhn/Σhd − Σbn/Σbd): each resample draws len(recs) records with
// replacement, the same draw for both runs. It stops between chunks once
// ctx is done and returns ctx's error.
func bootstrap(ctx context.Context, recs []record, scale float64, resamples int, seed, stream uint64, workers int) ([]float64, error) {
	xs := make([]quad, len(recs))
	for i, r := range recs {
		xs[i] = quad{r.bn, r.bd, r.hn, r.hd}
	}
	out := make([]float64, resamples)
	chunks := (resamples + chunkSize - 1) / chunkSize
	run := func(c int) {
		if ctx.Err() != nil {
			return // cancelled: the caller discards the distribution
		}
		lo := c * chunkSize
		resample(xs, scale, out[lo:min(lo+chunkSize, resamples)], newStream(seed, stream, c))
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers = min(workers, chunks); workers <= 1 {
		for c := range chunks {
			run(c)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for c := int(next.Add(1) - 1); c < chunks; c = int(next.Add(1) - 1) {
					run(c)
				}
			})
		}
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sort.Float64s(out)
	return out, nil
}

func resample(xs []quad, scale float64, out []float64, g *rand.PCG) {
	n := uint64(len(xs))
	for r := range out {
		var bn, bd, hn, hd float64
		for range n {
			x := &xs[boundedIndex(g, n)]
			bn += x.bn
			bd += x.bd
			hn += x.hn
			hd += x.hd
		}
		out[r] = scale * (safeDiv(hn, hd) - safeDiv(bn, bd))
	}
}

// boundedIndex draws uniformly from [0, n) by Lemire's multiply-and-reject,
// calling the concrete generator directly (no interface call per draw).
func boundedIndex(g *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(g.Uint64(), n)
	if lo < n {
		threshold := -n % n
		for lo < threshold {
			hi, lo = bits.Mul64(g.Uint64(), n)
		}
	}
	return hi
}

// newStream seeds chunk c of a group's resamples.
func newStream(seed, stream uint64, c int) *rand.PCG {
	return rand.NewPCG(seed, splitmix.Mix(stream^splitmix.Mix(uint64(c)+1)))
}

// streamOf gives each group its own streams, so adding a group does not
// change the numbers of the others.
func streamOf(group string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(group))
	return h.Sum64()
}

// quantile reads the q-th quantile of sorted values, interpolating
// linearly between order statistics.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	f := pos - float64(i)
	return sorted[i] + f*(sorted[i+1]-sorted[i])
}

// pValue is the two-sided bootstrap p-value for "no difference": twice the
// smaller share of resamples at or beyond zero on either side, with the
// usual +1 so it is never exactly zero, capped at 1.
func pValue(sorted []float64) float64 {
	var le, ge int
	for _, v := range sorted {
		if v <= 0 {
			le++
		}
		if v >= 0 {
			ge++
		}
	}
	b := float64(len(sorted))
	p := 2 * (float64(min(le, ge)) + 1) / (b + 1)
	return math.Min(p, 1)
}

func stddev(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var mean float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}
