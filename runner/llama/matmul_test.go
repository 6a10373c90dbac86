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
// takes it (scripts/engine.sh's gemm.c for float16 weights and batches of
// 32 rows or more, tinyBLAS or ggml's dot products otherwise), equals the
// float64 sum of the same float16-rounded products within float32's
// summation error: shapes with every kind of tail, blocks of k and rows
// beyond one block, strided rows, and batches with broadcast.
func TestMatMulExact(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       matShape
		threads int
	}{
		{"f16 tails", matShape{m: 37, k: 72, n: 37, lda: 72, ldb: 72, batchA: 1, batchB: 1, aF16: true}, 2},
		{"f16 k not a multiple of 8", matShape{m: 16, k: 13, n: 32, lda: 13, ldb: 13, batchA: 1, batchB: 1, aF16: true}, 1},
		{"f16 strided rows, blocks of k and of rows", matShape{m: 300, k: 648, n: 75, lda: 656, ldb: 660, batchA: 1, batchB: 1, aF16: true}, 2},
		{"f16 three threads, fewer tiles than threads", matShape{m: 20, k: 64, n: 40, lda: 64, ldb: 64, batchA: 1, batchB: 1, aF16: true}, 3},
		{"f16 small batch", matShape{m: 64, k: 64, n: 8, lda: 64, ldb: 64, batchA: 1, batchB: 1, aF16: true}, 2},
		{"f16 broadcast batches", matShape{m: 48, k: 64, n: 40, lda: 64, ldb: 64, batchA: 2, batchB: 6, aF16: true}, 2},
		{"f32", matShape{m: 70, k: 64, n: 50, lda: 64, ldb: 72, batchA: 1, batchB: 1}, 2},
		{"f32 broadcast batches", matShape{m: 96, k: 64, n: 33, lda: 64, ldb: 64, batchA: 3, batchB: 9}, 2},
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

// gemm.c takes float16 weights times 32 rows or more where it is compiled
// (x86 with AVX2, FMA and F16C), and ggml's plan reserves its panels of b
// (6 rows of k floats each); fewer rows stay with tinyBLAS, whose work
// buffer holds b in float16 only.
func TestMatMulPacksFloat16Weights(t *testing.T) {
	built := compiledFor()
	for _, set := range []string{"AVX2", "FMA", "F16C"} {
		if !slices.Contains(built, set) {
			t.Skipf("built for %q, without %s: gemm.c takes nothing", strings.Join(built, " "), set)
		}
	}
	for _, n := range []int{8, 64} {
		s := matShape{m: 32, k: 64, n: n, lda: 64, ldb: 64, batchA: 1, batchB: 1, aF16: true}
		_, work, err := matMul(s, make([]float32, s.m*s.k), make([]float32, s.n*s.k), 2)
		if err != nil {
			t.Fatal(err)
		}
		panels := (n + 5) / 6 * 6 * s.k * 4
		if packed := work >= panels; packed != (n >= 32) {
			t.Errorf("%d rows: ggml's plan reserves %d bytes, %d for b's panels: packed %v, want %v (is scripts/engine.sh's hook in ggml_graph_plan?)",
				n, work, panels, packed, n >= 32)
		}
	}
}
