//go:build cgo

package llama

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/x448/float16"
)

// Every matrix product ggml-cpu computes here, through whichever kernel
// takes it (scripts/engine.sh's gemm.c for 128 rows of src0 or more times
// 128 of src1 or more, 32 for float32; tinyBLAS otherwise), equals
// the float64 sum of the same products (src1 rounded to float16 against
// float16 weights, as ggml rounds it) within float32's summation error:
// tails of every kind, blocks of k and of rows, strided rows, batches
// with broadcast (attention's heads), more threads than tiles.
func TestMatMulExact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		s       matShape
		threads int
	}{
		{"f16 tails", matShape{m: 133, k: 72, n: 133, lda: 72, ldb: 72, batchA: 1, batchB: 1, aF16: true}, 2},
		{"f16 k not a multiple of 8", matShape{m: 128, k: 13, n: 128, lda: 13, ldb: 13, batchA: 1, batchB: 1, aF16: true}, 1},
		{"f16 strided rows, blocks of k and of rows", matShape{m: 300, k: 648, n: 135, lda: 656, ldb: 660, batchA: 1, batchB: 1, aF16: true}, 2},
		{"f16 more threads than tiles", matShape{m: 130, k: 64, n: 130, lda: 64, ldb: 64, batchA: 1, batchB: 1, aF16: true}, 12},
		{"f16 few rows of src1", matShape{m: 128, k: 64, n: 100, lda: 64, ldb: 64, batchA: 1, batchB: 1, aF16: true}, 2},
		{"f16 few rows of src0", matShape{m: 40, k: 64, n: 130, lda: 64, ldb: 64, batchA: 1, batchB: 1, aF16: true}, 2},
		{"f16 broadcast batches", matShape{m: 144, k: 64, n: 130, lda: 64, ldb: 64, batchA: 2, batchB: 6, aF16: true}, 2},
		{"f32", matShape{m: 170, k: 64, n: 50, lda: 64, ldb: 72, batchA: 1, batchB: 1}, 2},
		{"f32 heads as attention's scores", matShape{m: 256, k: 64, n: 33, lda: 192, ldb: 576, batchA: 3, batchB: 9}, 3},
		{"f32 few rows of src0, long k", matShape{m: 64, k: 700, n: 40, lda: 800, ldb: 700, batchA: 1, batchB: 3}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			rng := rand.New(rand.NewPCG(uint64(s.m), uint64(s.n)))
			a, b := randoms(rng, s.batchA*s.m*s.lda), randoms(rng, s.batchB*s.n*s.ldb)
			c, _, err := matMul(s, a, b, tc.threads)
			if err != nil {
				t.Fatal(err)
			}
			// ggml rounds b to float16 whenever a is float16.
			round := func(v float32) float64 { return float64(v) }
			if s.aF16 {
				round = func(v float32) float64 { return float64(float16.Fromfloat32(v).Float32()) }
			}
			worst := 0.0
			for batch := range s.batchB {
				ab := batch / (s.batchB / s.batchA)
				for j := range s.n {
					for i := range s.m {
						var sum, abs float64
						for k := range s.k {
							p := round(a[(ab*s.m+i)*s.lda+k]) * round(b[(batch*s.n+j)*s.ldb+k])
							sum += p
							abs += math.Abs(p)
						}
						got := float64(c[(batch*s.n+j)*s.m+i])
						d := math.Abs(got - sum)
						if !(d <= 1e-6*abs+1e-9) {
							t.Fatalf("batch %d row %d column %d: ggml %.9g, float64 %.9g (|products| sum to %.3g)", batch, j, i, got, sum, abs)
						}
						worst = max(worst, d/(abs+1e-30))
					}
				}
			}
			t.Logf("largest error relative to the products' absolute sum: %.2g", worst)
		})
	}
}

func randoms(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.Float64()*2 - 1)
	}
	return v
}

// gemm.c takes 128 rows of src0 or more times 128 of src1 or more (32
// for float32) where it is compiled (x86 with AVX2, FMA and F16C), and ggml's plan reserves its
// panels of src1 (6 rows of k floats each); other products stay with
// tinyBLAS, whose work buffer holds src1 in float16 at most.
func TestMatMulPacks(t *testing.T) {
	t.Parallel()
	built := compiledFor()
	if !vectorBuild() {
		t.Skipf("built for %q, without AVX2, FMA or F16C: gemm.c takes nothing", strings.Join(built, " "))
	}
	if slices.Contains(built, "AVX-512F") {
		t.Skipf("built for %q: with AVX-512 gemm.c leaves every product to tinyBLAS", strings.Join(built, " "))
	}
	for _, tc := range []struct {
		s    matShape
		want bool
	}{
		{matShape{m: 128, k: 64, n: 128, lda: 64, ldb: 64, batchA: 1, batchB: 1, aF16: true}, true},
		{matShape{m: 128, k: 64, n: 100, lda: 64, ldb: 64, batchA: 1, batchB: 1, aF16: true}, false},
		{matShape{m: 64, k: 64, n: 128, lda: 64, ldb: 64, batchA: 1, batchB: 1, aF16: true}, false},
		{matShape{m: 256, k: 64, n: 32, lda: 64, ldb: 64, batchA: 1, batchB: 3}, true},
		{matShape{m: 256, k: 64, n: 31, lda: 64, ldb: 64, batchA: 1, batchB: 3}, false},
		{matShape{m: 64, k: 256, n: 64, lda: 256, ldb: 256, batchA: 1, batchB: 3}, false},
	} {
		s := tc.s
		_, work, err := matMul(s, make([]float32, s.batchA*s.m*s.lda), make([]float32, s.batchB*s.n*s.ldb), 2)
		if err != nil {
			t.Fatal(err)
		}
		panels := s.batchB * ((s.n + 5) / 6) * 6 * s.k * 4
		if packed := work >= panels; packed != tc.want {
			t.Errorf("%+v: ggml's plan reserves %d bytes, %d for src1's panels: packed %v, want %v (is scripts/engine.sh's hook in ggml_graph_plan?)",
				s, work, panels, packed, tc.want)
		}
	}
}
