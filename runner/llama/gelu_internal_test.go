//go:build cgo

package llama

import (
	"math"
	"testing"
)

// geluStable is GELU's tanh form in float64 as x / (1 + exp(-2u)), which
// keeps its relative precision where 1 + tanh u cancels (x < -5).
func geluStable(x float64) float64 {
	u := math.Sqrt(2/math.Pi) * (x + 0.044715*x*x*x)
	return x / (1 + math.Exp(-2*u))
}

// TestGELUAccuracy runs ggml's GELU and GEGLU ops (patch 0012) over every
// 4099th finite float. Within 1.5 ulp of x everywhere, and within 16 ulp
// of the result for x >= -3, where activations live; tanhf's 0.5 x (1 +
// tanh u), the code before, misses the second by 171 ulp (1 + tanh u
// cancels) and the first at 1.63. Each value is also placed at every
// position of a row, so vector lanes and the tail must agree to the bit.
func TestGELUAccuracy(t *testing.T) {
	t.Parallel()
	var xs []float32
	for b := uint64(0); b < 1<<32; b += 4099 {
		x := math.Float32frombits(uint32(b))
		if !math.IsInf(float64(x), 0) && !math.IsNaN(float64(x)) {
			xs = append(xs, x)
		}
	}
	worstX, worstY := 0.0, 0.0
	for lo := 0; lo < len(xs); lo += 65536 {
		x := xs[lo:min(lo+65536, len(xs))]
		gelu, geglu, err := ggmlGELU(x)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range x {
			if math.Float32bits(gelu[i]) != math.Float32bits(geglu[i]) {
				t.Fatalf("GELU(%g) = %g, GEGLU with gate 1 = %g", v, gelu[i], geglu[i])
			}
			want := geluStable(float64(v))
			d := math.Abs(float64(gelu[i]) - want)
			worstX = max(worstX, d/ulp32(float64(v)))
			if v >= -3 && math.Abs(want) >= 0x1p-126 {
				worstY = max(worstY, d/ulp32(want))
			}
		}
	}
	t.Logf("largest error %.3f ulp of x, %.3f ulp of GELU(x) for x >= -3", worstX, worstY)
	if worstX > 1.5 || worstY > 16 {
		t.Errorf("GELU misses float64 by %.3f ulp of x (limit 1.5), %.3f ulp of the result for x >= -3 (limit 16)", worstX, worstY)
	}
	// Every position of rows of 1 to 40: vector lanes and scalar tails.
	for _, v := range []float32{-5.3, -2.7182817, -0.3, 1e-30, 0.7, 3.1415927} {
		want, _, err := ggmlGELU([]float32{v})
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= 40; n++ {
			row := make([]float32, n)
			for i := range row {
				row[i] = v
			}
			got, _, err := ggmlGELU(row)
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range got {
				if math.Float32bits(g) != math.Float32bits(want[0]) {
					t.Fatalf("GELU(%g) at %d of %d = %g, alone %g", v, i, n, g, want[0])
				}
			}
		}
	}
}

// ulp32 is the spacing of float32 at |v| (normal floats; 2^-149 below).
func ulp32(v float64) float64 {
	if math.Abs(v) < 0x1p-126 {
		return 0x1p-149
	}
	_, e := math.Frexp(v)
	return math.Ldexp(1, e-24)
}
