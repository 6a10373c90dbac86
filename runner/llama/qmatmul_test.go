//go:build cgo

package llama

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Where scripts/engine/qgemm.c is compiled (x86 with AVX2, FMA and F16C),
// every product of quantized weights by float32 activations is the float64
// sum of the dequantized weights times the activations as they are, within
// float32's summation error, and each row of the product is the same bits
// whether it is computed alone, in a batch, or on another number of
// threads; times the identity it gives the weights exactly as ggml's
// to_float dequantizes them. ggml's own kernels round the activations to 8
// bits first, about 1e-3 of the products' absolute sum, and fail the first
// check; rows in a batch of more than qgemm.c's 1024 rows at a time, tails
// of tiles and blocks of k that are not KC are covered.
func TestQuantizedMatMul(t *testing.T) {
	t.Parallel()
	if !vectorBuild() {
		t.Skipf("built for %q, without AVX2, FMA or F16C: quantized products stay with ggml", strings.Join(compiledFor(), " "))
	}
	for _, tc := range []struct {
		typ        string
		m, k, n    int
		threads    int
		aloneRows  []int
		batchRows2 int // a second batch size whose rows must match
	}{
		{"q4_0", 200, 576, 300, 2, []int{0, 299, 7}, 13},
		{"q4_1", 130, 576, 1030, 2, []int{0, 1029, 1024, 1023}, 1025},
		{"q5_0", 96, 640, 70, 3, []int{0, 69}, 1},
		{"q5_1", 64, 640, 40, 1, []int{5}, 7},
		{"q8_0", 200, 640, 150, 2, []int{0, 149}, 64},
		{"q2_K", 70, 512, 40, 2, []int{3}, 9},
		{"q3_K", 70, 512, 40, 2, []int{3}, 9},
		{"q4_K", 200, 768, 140, 2, []int{0, 139}, 5},
		{"q5_K", 70, 512, 40, 2, []int{3}, 9},
		{"q6_K", 150, 2048, 60, 2, []int{0, 59}, 17},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(tc.m), uint64(tc.k)))
			a, b := randoms(rng, tc.m*tc.k), randoms(rng, tc.n*tc.k)
			c, deq, _, err := matMulQuantized(tc.typ, a, tc.m, tc.k, b, tc.n, tc.threads)
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for j := range tc.n {
				for i := range tc.m {
					var sum, abs float64
					for k := range tc.k {
						p := float64(deq[i*tc.k+k]) * float64(b[j*tc.k+k])
						sum += p
						abs += math.Abs(p)
					}
					got := float64(c[j*tc.m+i])
					d := math.Abs(got - sum)
					if !(d <= 1e-6*abs+1e-9) {
						t.Fatalf("row %d column %d: ggml %.9g, float64 of the dequantized weights %.9g (|products| sum to %.3g)", j, i, got, sum, abs)
					}
					worst = max(worst, d/(abs+1e-30))
				}
			}
			t.Logf("largest error relative to the products' absolute sum: %.2g", worst)
			// Times the identity, the product is the weights as the kernel
			// dequantized them (every other product is 0): ggml's to_float
			// values, which qgemm.c's own dequantizing must equal bit for
			// bit (but for the sign of a zero, which the sums drop).
			id := make([]float32, tc.k*tc.k)
			for j := range tc.k {
				id[j*tc.k+j] = 1
			}
			w, _, _, err := matMulQuantized(tc.typ, a, tc.m, tc.k, id, tc.k, tc.threads)
			if err != nil {
				t.Fatal(err)
			}
			for j := range tc.k {
				for i := range tc.m {
					if g, d := w[j*tc.m+i], deq[i*tc.k+j]; g != d {
						t.Fatalf("weight %d, %d: the kernel multiplied %.9g, ggml's to_float gives %.9g", i, j, g, d)
					}
				}
			}
			same := func(what string, j0, rows, threads int) {
				t.Helper()
				got, _, _, err := matMulQuantized(tc.typ, a, tc.m, tc.k, b[j0*tc.k:(j0+rows)*tc.k], rows, threads)
				if err != nil {
					t.Fatal(err)
				}
				for j := range rows {
					for i := range tc.m {
						if g, w := got[j*tc.m+i], c[(j0+j)*tc.m+i]; math.Float32bits(g) != math.Float32bits(w) {
							t.Fatalf("%s: row %d column %d is %.9g, in the batch of %d on %d threads %.9g", what, j0+j, i, g, tc.n, tc.threads, w)
						}
					}
				}
			}
			for _, j := range tc.aloneRows {
				same("alone", j, 1, 1)
			}
			same("a smaller batch at the end", tc.n-tc.batchRows2, tc.batchRows2, 3)
			same("the whole batch on one thread", 0, tc.n, 1)
		})
	}
}
