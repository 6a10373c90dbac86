//go:build cgo

package llama

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// ggml's flash attention in this binary (scripts/engine/attn.c where it
// takes the operation) equals the float64 attention of the same inputs
// within float32 rounding: causal masks over packed sequences, so tiles
// are hidden whole, in part or not at all; lengths that are no multiple
// of the kernel's 64-query and 64-key tiles, nor of its micro-tiles (4 or
// 6 keys of scores, 3 or 4 vectors of P.V, 8 or 16 queries a float32
// vector); grouped-query heads; float16 keys and values (attn.c's only);
// two streams (separate caches); no mask; and soft-capped scores, which
// attn.c leaves to ggml's loop as patched (0009, as it does every float32
// attention without attn.c).
func TestFlashAttentionExact(t *testing.T) {
	t.Parallel()
	tiled := TiledAttention()
	for _, tc := range []struct {
		name    string
		s       attnShape
		packed  int // cells per packed sequence, 0 for one sequence
		causal  bool
		threads int
	}{
		{"causal, grouped heads, tails", attnShape{seqs: 1, nq: 150, nkv: 200, heads: 6, kvh: 2, dk: 64, dv: 64}, 0, true, 2},
		{"causal, packed sequences", attnShape{seqs: 1, nq: 300, nkv: 300, heads: 3, kvh: 1, dk: 64, dv: 64}, 90, true, 3},
		{"float16 keys and values, odd head size", attnShape{seqs: 1, nq: 70, nkv: 133, heads: 4, kvh: 4, dk: 40, dv: 72, kF16: true, vF16: true}, 0, true, 2},
		{"two streams", attnShape{seqs: 2, nq: 65, nkv: 100, heads: 2, kvh: 1, dk: 64, dv: 64}, 0, true, 2},
		{"a 3-key tail, 40 queries", attnShape{seqs: 1, nq: 40, nkv: 195, heads: 2, kvh: 1, dk: 48, dv: 48}, 0, true, 2},
		{"one query", attnShape{seqs: 1, nq: 1, nkv: 37, heads: 9, kvh: 3, dk: 64, dv: 64}, 0, true, 1},
		{"no mask", attnShape{seqs: 1, nq: 33, nkv: 130, heads: 2, kvh: 2, dk: 32, dv: 32}, 0, false, 2},
		{"soft-capped (ggml's kernel)", attnShape{seqs: 1, nq: 20, nkv: 50, heads: 2, kvh: 1, dk: 64, dv: 64, softcap: 5}, 0, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.s
			// Without attn.c (arm64, x86 without AVX-512) a float32 cache
			// goes through scripts/engine.sh's edit of ggml's loop, exact
			// to the same tolerance; a float16 one through ggml's own,
			// which rounds the queries and sums the values in float16.
			if tiled != nil && (s.kF16 || s.vF16) {
				t.Skipf("float16 cache without the tiled kernel: %v", tiled)
			}
			rng := rand.New(rand.NewPCG(uint64(s.nq), uint64(s.nkv)))
			q, k, v := randoms(rng, s.seqs*s.nq*s.heads*s.dk), randoms(rng, s.seqs*s.nkv*s.kvh*s.dk), randoms(rng, s.seqs*s.nkv*s.kvh*s.dv)
			for i := range q {
				q[i] *= 3 // scores of a few units: a peaked softmax
			}
			// The queries are the last nq cells; a packed cell sees the
			// earlier cells of its own sequence.
			var mask []float32
			visible := func(i, j int) bool {
				c := s.nkv - s.nq + i
				if !tc.causal {
					return true
				}
				return j <= c && (tc.packed == 0 || j/tc.packed == c/tc.packed)
			}
			if tc.causal {
				mask = make([]float32, s.nq*s.nkv)
				for i := range s.nq {
					for j := range s.nkv {
						if !visible(i, j) {
							mask[i*s.nkv+j] = float32(math.Inf(-1))
						}
					}
				}
			}
			scale := float32(1 / math.Sqrt(float64(s.dk)))
			got, err := flashAttn(s, q, k, v, mask, scale, tc.threads)
			if err != nil {
				t.Fatal(err)
			}
			round := func(f16 bool, x float32) float64 {
				if f16 {
					return float64(float16.Fromfloat32(x).Float32())
				}
				return float64(x)
			}
			worst := 0.0
			sc := make([]float64, s.nkv)
			for seq := range s.seqs {
				for i := range s.nq {
					for h := range s.heads {
						kh := h / (s.heads / s.kvh)
						qi := q[((seq*s.nq+i)*s.heads+h)*s.dk:][:s.dk]
						mx, spread := math.Inf(-1), 0.0
						for j := range s.nkv {
							if !visible(i, j) {
								continue
							}
							var dot, abs float64
							for d, x := range qi {
								p := float64(x) * round(s.kF16, k[((seq*s.nkv+j)*s.kvh+kh)*s.dk+d])
								dot += p
								abs += math.Abs(p)
							}
							sc[j] = dot * float64(scale)
							if s.softcap != 0 {
								sc[j] = float64(s.softcap) * math.Tanh(sc[j]/float64(s.softcap))
							}
							mx = max(mx, sc[j])
							spread = max(spread, abs*float64(scale))
						}
						var sum float64
						for j := range s.nkv {
							if visible(i, j) {
								sc[j] = math.Exp(sc[j] - mx)
								sum += sc[j]
							}
						}
						for d := range s.dv {
							var want float64
							for j := range s.nkv {
								if visible(i, j) {
									want += sc[j] * round(s.vF16, v[((seq*s.nkv+j)*s.kvh+kh)*s.dv+d])
								}
							}
							want /= sum
							g := float64(got[((seq*s.nq+i)*s.heads+h)*s.dv+d])
							// Each score is off by float32 rounding of its
							// products' absolute sum, each weighted sum by
							// a few roundings of values within [-1, 1].
							tol := 1e-6 * (4 + 2*spread)
							if e := math.Abs(g - want); !(e <= tol) {
								t.Fatalf("stream %d query %d head %d dim %d: ggml %.9g, float64 %.9g (tolerance %.2g)", seq, i, h, d, g, want, tol)
							}
							worst = max(worst, math.Abs(g-want))
						}
					}
				}
			}
			t.Logf("largest error: %.2g", worst)
		})
	}
}

// Every x86 build with AVX2, FMA and F16C carries the tiled kernel, the
// 8-lane one where it has no AVX-512 (the x86-64-v3 variant, Zen 3's
// native build): there the unfused path is what made long windows slow.
func TestTiledAttentionInVectorBuilds(t *testing.T) {
	t.Parallel()
	if !vectorBuild() {
		t.Skip("not an x86 build with AVX2, FMA and F16C")
	}
	if err := TiledAttention(); err != nil {
		t.Fatalf("an x86 build with AVX2, FMA and F16C has no tiled attention: %v", err)
	}
}

// Attention is read by name; by default it is fused on the CPU exactly
// where the tiled kernel is in this binary, and either way can be asked for.
func TestParseAttention(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want Attention
		ok   bool
	}{
		{"", AttentionAuto, true},
		{"auto", AttentionAuto, true},
		{"flash", AttentionFlash, true},
		{"unfused", AttentionUnfused, true},
		{"on", 0, false},
	} {
		got, err := ParseAttention(tc.name)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseAttention(%q) = %v, %v; want %v (ok %v)", tc.name, got, err, tc.want, tc.ok)
		}
	}
	if got, want := (Options{CPUOnly: true}).flash(false), TiledAttention() == nil; got != want {
		t.Errorf("AttentionAuto on the CPU fuses: %v, want %v (TiledAttention: %v)", got, want, TiledAttention())
	}
	if !(Options{CPUOnly: true}).flash(true) {
		t.Error("AttentionAuto on the CPU must fuse a quantized model's attention, with or without the tiled kernel")
	}
	for _, q := range []bool{false, true} {
		if !(Options{Attention: AttentionFlash}).flash(q) || (Options{Attention: AttentionUnfused, CPUOnly: true}).flash(q) {
			t.Error("AttentionFlash must fuse and AttentionUnfused must not")
		}
	}
}
