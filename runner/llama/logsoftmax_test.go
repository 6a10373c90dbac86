//go:build cgo

package llama

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// expULP is the most a log-softmax exponential may miss exp(t), in units
// of the last place of the float nearest exp(t).
const expULP = 1.0

// expLanes is score.c's EXP_LANES: element i of a row goes to lane i % 16.
const expLanes = 16

// ulpErr is |got - want| in ulps of float32 at want (want a normal float).
func ulpErr(got float32, want float64) float64 {
	_, e := math.Frexp(want) // want = m 2^e, m in [0.5, 1)
	return math.Abs(float64(got)-want) / math.Ldexp(1, e-24)
}

// expOne returns exp(t) through the row path (n = 1: the scalar code) and
// through a 16-element block (the vector code), t among -infs.
func expOne(t float32, lane int) (scalar, vector float32) {
	var blk [expLanes]float32
	for j := range blk {
		blk[j] = float32(math.Inf(-1))
	}
	blk[lane] = t
	return float32(sumExp([]float32{t}, 0)), float32(sumExp(blk[:], 0))
}

// TestExpNegAccuracy samples every 4099th float in [ln 2^-126, 0]: the
// exponential is within expULP of exp in float64, the vector lanes give
// the scalar code's bits, and below the range (to -inf) the result is 0.
func TestExpNegAccuracy(t *testing.T) {
	t.Parallel()
	lo := math.Float32bits(-0x1.5d58a0p+6)
	worst, at := 0.0, float32(0)
	for b := uint32(0x80000000); b <= lo; b += 4099 {
		x := math.Float32frombits(b)
		s, v := expOne(x, int(b>>8)%expLanes)
		if math.Float32bits(s) != math.Float32bits(v) {
			t.Fatalf("exp(%g): scalar code %g, vector code %g", x, s, v)
		}
		want := math.Exp(float64(x))
		if want < 0x1p-126 {
			// Results in the subnormal range lose bits to rounding.
			if d := math.Abs(float64(s) - want); d > 0x1p-149 {
				t.Fatalf("exp(%g) = %g, want %g", x, s, want)
			}
			continue
		}
		if e := ulpErr(s, want); e > worst {
			worst, at = e, x
		}
	}
	t.Logf("largest error %.3f ulp, at t = %g", worst, at)
	if worst > expULP {
		t.Errorf("exp(%g) is %.3f ulp from exp in float64, over %g", at, worst, expULP)
	}
	for _, x := range []float32{-0x1.5d58a2p+6, -88, -100, -1e30, float32(math.Inf(-1))} {
		if s, v := expOne(x, 3); s != 0 || v != 0 {
			t.Errorf("exp(%g) = %g (scalar), %g (vector), want 0 below 2^-126", x, s, v)
		}
	}
}

// logitRow is a real-shaped row of n logits: a heavy-tailed bulk, a few
// tokens well above it, as a language model's head gives.
func logitRow(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	if n%2 == 1 {
		// Odd rows are flat, as an untrained head's: every term counts.
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	for i := range x {
		// Student's t with 3 degrees of freedom, scaled like logits.
		g := rng.NormFloat64()
		c := rng.NormFloat64()*rng.NormFloat64() + rng.NormFloat64()*rng.NormFloat64() + rng.NormFloat64()*rng.NormFloat64()
		x[i] = float32(2.5*g/math.Sqrt(math.Abs(c)/3+1e-3) - 4)
	}
	for k := 0; k < 1+n/5000; k++ {
		x[rng.IntN(n)] = float32(15 + 10*rng.Float64())
	}
	return x
}

// lseFloat64 is the log-sum-exp in float64 from the float differences, as
// score.c forms them.
func lseFloat64(x []float32, accumulate func(s, e float64) float64) float64 {
	mx := x[0]
	for _, v := range x {
		mx = max(mx, v)
	}
	s := 0.0
	for _, v := range x {
		s = accumulate(s, math.Exp(float64(v-mx)))
	}
	return float64(mx) + math.Log(s)
}

func rowLengths() []int {
	var ns []int
	for n := 1; n <= 80; n++ {
		ns = append(ns, n)
	}
	for k := 0; k < expLanes; k++ {
		ns = append(ns, 4096+k, 49152+k, 262144-k, 262144-k-expLanes)
	}
	return ns
}

// TestLogSumExpAccuracy holds the log-sum-exp of real-shaped rows of every
// tail length, up to Gemma 3's 262,144 tokens, within 2^-23 of float64's
// (each term within expULP, at most 2^-23 of itself, moves the log by at
// most that), and shows the bound has teeth: a float32 running sum, the
// naive loop, misses it on long rows.
func TestLogSumExpAccuracy(t *testing.T) {
	t.Parallel()
	const tol = 0x1p-23
	rng := rand.New(rand.NewPCG(53, 1))
	worst, worstOld, naive := 0.0, 0.0, 0.0
	for _, n := range rowLengths() {
		x := logitRow(rng, n)
		got := logSumExp(x)
		want := lseFloat64(x, func(s, e float64) float64 { return s + e })
		if d := math.Abs(got - want); d > tol || math.IsNaN(got) {
			t.Fatalf("n=%d: log-sum-exp %.17g, float64 gives %.17g (off by %.3g, over %g)", n, got, want, d, tol)
		} else if d > worst {
			worst = d
		}
		// The code before vectorising: expf (correctly rounded) summed in order.
		old := lseFloat64(x, func(s, e float64) float64 { return s + float64(float32(e)) })
		worstOld = max(worstOld, math.Abs(got-old))
		if n >= 49152 {
			f := lseFloat64(x, func(s, e float64) float64 { return float64(float32(s) + float32(e)) })
			naive = max(naive, math.Abs(f-want))
		}
	}
	t.Logf("largest difference from float64 %.3g, from the scalar expf loop %.3g; a float32 sum misses by %.3g", worst, worstOld, naive)
	if naive <= tol {
		t.Errorf("a float32 running sum stays within %g (off by %.3g): the tolerance cannot tell it from a double sum", tol, naive)
	}
}

// TestSumExpOrder checks that a row's sum is its elements' exponentials
// added lane by lane (i % 16) and then in one fixed tree, whatever the
// row's alignment in memory and however many goroutines ask at once.
func TestSumExpOrder(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(53, 2))
	for _, n := range rowLengths() {
		if n > 65536 && n%expLanes > 1 {
			continue // the tails are covered at 4096 and 49152; this is slow
		}
		buf := logitRow(rng, n+1)
		x := buf[:n]
		mx, ok := rowMax(x)
		if !ok {
			t.Fatalf("n=%d: a finite row reported non-finite", n)
		}
		var acc [expLanes]float64
		for i, v := range x {
			acc[i%expLanes] += sumExp([]float32{v}, mx)
		}
		for w := expLanes / 2; w > 0; w /= 2 {
			for j := 0; j < w; j++ {
				acc[j] += acc[j+w]
			}
		}
		if got := sumExp(x, mx); got != acc[0] {
			t.Fatalf("n=%d: sum %.17g, lane by lane %.17g", n, got, acc[0])
		}
		// The same values one float further on: another alignment.
		copy(buf[1:], x)
		if got := sumExp(buf[1:], mx); got != acc[0] {
			t.Fatalf("n=%d: sum %.17g at an odd address, %.17g at an even one", n, got, acc[0])
		}
		if n < 4096 {
			continue
		}
		var wg sync.WaitGroup
		sums := make([]float64, 4)
		for g := range sums {
			wg.Add(1)
			go func() { defer wg.Done(); sums[g] = sumExp(buf[1:], mx) }()
		}
		wg.Wait()
		for _, s := range sums {
			if s != acc[0] {
				t.Fatalf("n=%d: concurrent sums %v, want %.17g", n, sums, acc[0])
			}
		}
	}
}

// TestLogSumExpNonFinite puts NaN, +inf and -inf at every position of rows
// of every tail length: the log-sum-exp is NaN, and udgam_row_max reports
// it, also when called panel by panel with one flag.
func TestLogSumExpNonFinite(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(53, 3))
	for _, n := range []int{1, 2, 15, 16, 17, 31, 32, 33, 47, 100} {
		x := logitRow(rng, n)
		for i := range x {
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				v := x[i]
				x[i] = float32(bad)
				if got := logSumExp(x); !math.IsNaN(got) {
					t.Fatalf("n=%d, x[%d]=%g: log-sum-exp %g, want NaN", n, i, bad, got)
				}
				finite := true
				for p := 0; p < n; p += 7 {
					_, ok := rowMax(x[p:min(p+7, n)])
					finite = finite && ok
				}
				if finite {
					t.Fatalf("n=%d, x[%d]=%g: row_max by panels of 7 saw no non-finite logit", n, i, bad)
				}
				x[i] = v
			}
		}
		if m, ok := rowMax(x); !ok || m != slicesMax(x) {
			t.Fatalf("n=%d: row_max %g (finite %v), want %g", n, m, ok, slicesMax(x))
		}
	}
}

func slicesMax(x []float32) float32 {
	m := x[0]
	for _, v := range x {
		m = max(m, v)
	}
	return m
}
