// udgam-ci's matrix product for ggml-cpu on x86 with AVX2, FMA and F16C
// (16 lanes with AVX-512F), installed by scripts/engine.sh (its header
// says why).
//
// ggml's MUL_MAT gives dst[n][m] = sum_k src0[m][k] * src1[n][k], both
// operands k-contiguous: src0 the weights (float16, bfloat16 or float32)
// or, in attention, the cache's keys; src1 the activations or queries
// (float32, rounded to float16 or bfloat16 exactly as ggml rounds them for
// its own kernels when src0 is). tinyBLAS multiplies the operands as they
// lie and loads (and widens) 7 vectors per 12 FMAs, and at attention's k
// of one head (64) it spends much of each tile summing lanes. Here src1 is
// packed once, k by k, into panels of NR rows that all threads share, and
// each thread packs MR-row panels of src0 for its share of the rows; an
// MR x NR outer-product kernel then issues 2 loads and NR broadcasts per
// 2*NR FMAs and converts nothing: 16x6 with AVX2 (12 of the 16 vector
// registers accumulate), 32x12 with AVX-512 (24 of 32). Every product is
// of the same two values, in float32, summed in another order: results
// differ from tinyBLAS's by float32 rounding only. Each output sums up to
// KC steps of k in one chain, where tinyBLAS's lanes make 8 or 16 shorter
// ones: about twice its rounding error (RMS 5.9e-7 against 3.0e-7 at
// k = 576, values in [-0.5, 0.5], BENCHMARKS.md); joining partial sums
// every 16 steps made it smaller than tinyBLAS's at about three quarters
// of the speed.
//
// Bfloat16 weights, where the CPU has AVX512-BF16 (run-time check, so the
// x86-64-v4 build gets it too), are packed as pairs of k and multiplied
// by vdpbf16ps, two products per lane and instruction: twice the FMA
// kernel's rate. Measured on Zen 5 it adds each exact product of two
// bfloat16 values to the float32 sum in turn, rounding to nearest even,
// as an FMA chain does, and flushes denormals (as ggml's own bfloat16
// kernel, the same instruction, does). Without it they are widened to
// float32 as packed and go through the FMA kernel.
//
// Measured one product on one thread against tinyBLAS compiled with the
// same flags (gemmbench, BENCHMARKS.md issue 31; Zen 5): the AVX2 kernel
// runs at 0.5-0.8 of AVX-512 tinyBLAS, the 32x12 kernel at about the
// core's FMA peak, 1.0-1.3x tinyBLAS on the weights (float16, float32),
// 2-3x on attention's scores, and the bfloat16 pairs 1.0-1.3x tinyBLAS's
// vdpbf16ps kernel (2-2.5x its widening one, x86-64-v4's).
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define UDGAM_GEMM 1

#if defined(__AVX512F__)
// 16 lanes: two zmm of src0 per step against NR broadcasts of src1, 2*NR
// accumulators of the 32 registers.
enum {
	MR = 32,  // rows of src0 per tile: two vectors
	NR = 12,  // rows of src1 per tile: 24 accumulators, 2 loads, 12 broadcasts
	KC = 256, // most k per block: a 12 x KC panel of src1 (12 KB) stays in L1
	MC = 128, // most rows of src0 packed per block, every k (block_rows)
};
#else
enum {
	MR = 16,  // rows of src0 per tile: two vectors
	NR = 6,   // rows of src1 per tile: 12 accumulators, 2 loads, 1 broadcast
	KC = 320, // most k per block: a 16 x KC panel of src0 (20 KB) beside a 6 x KC one of src1 in L1
	MC = 128, // most rows of src0 packed per block, every k (block_rows)
};
#endif

// Blocks of k as even as KC allows, a multiple of 8 when k is.
static int64_t k_block(int64_t k) {
	int64_t n = (k + KC - 1) / KC;
	int64_t kc = (k + n - 1) / n;
	return (kc + 7) & ~(int64_t)7;
}

// src1's panels: NR rows, every k, NR floats per k, and 8 floats of slack
// for pack's last overlapping store.
static int64_t panel_floats(int64_t k) { return NR * k + 8; }
static int64_t panels(int64_t n) { return (n + NR - 1) / NR; }

// How an operand's values are read: float16 or bfloat16 widened, float32
// as is, or float32 rounded to float16 or bfloat16 (src1 against float16
// or bfloat16 weights, as ggml rounds it for its own kernels). For the
// bfloat16 dot product (tile_bf16) each element is a pair of bfloat16
// values, k and k+1, in 32 bits: bfloat16 weights are read as they lie
// (F32, which copies bits), float32 activations rounded pair by pair
// (F32_AS_BF16_PAIRS).
enum kind { F16, BF16, F32, F32_AS_F16, F32_AS_BF16, F32_AS_BF16_PAIRS };

static inline size_t kind_size(enum kind kind) {
	return kind == F16 || kind == BF16 ? 2 : kind == F32_AS_BF16_PAIRS ? 8 : 4;
}

// bf16_round rounds float32 to bfloat16's 8 bits of precision, to nearest
// even, and returns it as float32: ggml's scalar GGML_FP32_TO_BF16 (a NaN
// stays a NaN).
static inline __m256 bf16_round(__m256 x) {
	const __m256i u = _mm256_castps_si256(x);
	const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
	const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff)));
	const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
	const __m256 y = _mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_or_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x400000))), nan);
	return _mm256_and_ps(y, _mm256_castsi256_ps(_mm256_set1_epi32((int)0xffff0000)));
}

static inline float bf16_round1(float x) {
	uint32_t u;
	memcpy(&u, &x, 4);
	u = (u & 0x7fffffff) > 0x7f800000 ? u | 0x400000 : u + 0x7fff + ((u >> 16) & 1);
	u &= 0xffff0000;
	memcpy(&x, &u, 4);
	return x;
}

// bf16_pairs rounds 16 floats to bfloat16 and returns them as 8 pairs,
// the even k in each pair's low 16 bits.
static inline __m256 bf16_pairs(const float *p) {
	const __m256i lo = _mm256_srli_epi32(_mm256_castps_si256(bf16_round(_mm256_loadu_ps(p))), 16);
	const __m256i hi = _mm256_srli_epi32(_mm256_castps_si256(bf16_round(_mm256_loadu_ps(p + 8))), 16);
	// packus orders 64-bit quarters as 0-3, 8-11, 4-7, 12-15.
	return _mm256_castsi256_ps(_mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8));
}

static inline __m256 load8(const char *p, enum kind kind) {
	switch (kind) {
	case F32_AS_BF16_PAIRS:
		return bf16_pairs((const float *)p);
	case F16:
		return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
	case BF16:
		return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
	case F32:
		return _mm256_loadu_ps((const float *)p);
	case F32_AS_BF16:
		return bf16_round(_mm256_loadu_ps((const float *)p));
	default:
		return _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps((const float *)p), _MM_FROUND_TO_NEAREST_INT));
	}
}

static inline float load1(const char *p, enum kind kind) {
	switch (kind) {
	case F16:
		return _cvtsh_ss(*(const uint16_t *)p);
	case BF16: {
		const uint32_t u = (uint32_t)*(const uint16_t *)p << 16;
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	case F32:
		return *(const float *)p;
	case F32_AS_BF16:
		return bf16_round1(*(const float *)p);
	case F32_AS_BF16_PAIRS: {
		float lo = bf16_round1(((const float *)p)[0]), hi = bf16_round1(((const float *)p)[1]), f;
		uint32_t ul, uh;
		memcpy(&ul, &lo, 4), memcpy(&uh, &hi, 4);
		ul = ul >> 16 | (uh & 0xffff0000);
		memcpy(&f, &ul, 4);
		return f;
	}
	default:
		return _cvtsh_ss(_cvtss_sh(*(const float *)p, _MM_FROUND_TO_NEAREST_INT));
	}
}

// transpose8 turns rows r[0..7] of 8 floats into columns.
static inline void transpose8(__m256 r[8]) {
	__m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
	__m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
	__m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
	__m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
	__m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
	__m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
	__m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
	__m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
	r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
	r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
	r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
	r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
	r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
	r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
	r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
	r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// An operand: its rows, ld elements apart, and how to read them.
struct operand {
	const char *x;
	int64_t ld;
	enum kind kind;
};

// pack writes rows 0..r-1 of o (r <= w, w MR or NR; rows beyond r are
// zero) over k0..k0+kc-1 as one panel: out[k*w + i] = o[i][k0+k]. Panels
// of MR are 32-byte aligned; one of NR needs 8 floats of slack at its end
// when NR is not a multiple of 8 (each k's last store of 8 floats runs
// into the next k, whose own stores come after and overwrite it).
static void pack(struct operand o, int64_t r, int64_t w, int64_t k0, int64_t kc, float *out) {
	const size_t row = o.ld * kind_size(o.kind), el = kind_size(o.kind);
	int64_t kk = 0;
	for (; kk + 8 <= kc; kk += 8) {
		__m256 v[(MR + 7) / 8][8];
		for (int64_t h = 0; h < w; h += 8) {
			for (int64_t i = 0; i < 8; i++)
				v[h / 8][i] = h + i < r ? load8(o.x + (h + i) * row + (k0 + kk) * el, o.kind) : _mm256_setzero_ps();
			transpose8(v[h / 8]);
		}
		for (int t = 0; t < 8; t++)
			for (int64_t h = 0; h < w; h += 8) {
				if (w == MR)
					_mm256_store_ps(out + (kk + t) * w + h, v[h / 8][t]);
				else
					_mm256_storeu_ps(out + (kk + t) * w + h, v[h / 8][t]);
			}
	}
	for (; kk < kc; kk++)
		for (int64_t i = 0; i < w; i++)
			out[kk * w + i] = i < r ? load1(o.x + i * row + (k0 + kk) * el, o.kind) : 0;
}

#if defined(__AVX512F__)
// store writes a tile's first nr rows of accumulators to dst (see tile).
static inline __attribute__((always_inline)) void store(__m512 acc[NR][2], float *c, int64_t ldc, int64_t mr, int64_t nr,
							bool add) {
	const __mmask16 m0 = mr >= 16 ? 0xffff : (__mmask16)((1u << mr) - 1);
	const __mmask16 m1 = mr >= MR ? 0xffff : mr <= 16 ? 0 : (__mmask16)((1u << (mr - 16)) - 1);
	for (int64_t j = 0; j < nr; j++) {
		float *cj = c + j * ldc;
		if (add) {
			acc[j][0] = _mm512_add_ps(acc[j][0], _mm512_maskz_loadu_ps(m0, cj));
			acc[j][1] = _mm512_add_ps(acc[j][1], _mm512_maskz_loadu_ps(m1, cj + 16));
		}
		_mm512_mask_storeu_ps(cj, m0, acc[j][0]);
		_mm512_mask_storeu_ps(cj + 16, m1, acc[j][1]);
	}
}

typedef void tile_fn(int64_t, const float *, const float *, float *, int64_t, int64_t, int64_t, bool);

// tile_j multiplies a 32 x kc panel a of src0 by the first J rows of a
// 12 x kc panel b of src1 into dst's rows j < nr <= J (ldc apart), columns
// i < mr; add keeps what dst holds (the previous blocks of k). 2J
// accumulators, 2 vectors of a and a broadcast of b: at most 27 of the 32
// vector registers. Each output is the same FMA chain whatever J is.
static inline __attribute__((always_inline)) void tile_j(int J, int64_t kc, const float *a, const float *b, float *c,
							 int64_t ldc, int64_t mr, int64_t nr, bool add) {
	__m512 acc[NR][2];
#pragma GCC unroll 12
	for (int j = 0; j < J; j++)
		acc[j][0] = _mm512_setzero_ps(), acc[j][1] = _mm512_setzero_ps();
	for (int64_t k = 0; k < kc; k++) {
		__m512 a0 = _mm512_load_ps(a), a1 = _mm512_load_ps(a + 16);
		__asm__("" : "+v"(a0), "+v"(a1));
#pragma GCC unroll 12
		for (int j = 0; j < J; j++) {
			const __m512 bj = _mm512_set1_ps(b[j]);
			acc[j][0] = _mm512_fmadd_ps(a0, bj, acc[j][0]);
			acc[j][1] = _mm512_fmadd_ps(a1, bj, acc[j][1]);
		}
		a += MR;
		b += NR;
	}
	store(acc, c, ldc, mr, nr, add);
}

// FEWEST_ROWS calls a tile_j-like f over as few rows of b as cover nr
// (4, 8 or 12): a product's last panel of src1 is often short (256 rows
// are 21 panels and 4 rows), and the full tile would multiply its zero
// rows as well.
#define FEWEST_ROWS(f, kc, a, b, c, ldc, mr, nr, add)                                                         \
	((nr) > 8 ? f(NR, kc, a, b, c, ldc, mr, nr, add)                                                      \
		  : (nr) > 4 ? f(8, kc, a, b, c, ldc, mr, nr, add) : f(4, kc, a, b, c, ldc, mr, nr, add))

__attribute__((noinline)) static void tile(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr,
					   int64_t nr, bool add) {
	FEWEST_ROWS(tile_j, kc, a, b, c, ldc, mr, nr, add);
}

// tile_bf16_j is tile_j for panels of bfloat16 pairs: kc pairs of k, each
// vdpbf16ps adding both products of a pair to its accumulator, twice the
// work of an FMA in one instruction. Its arithmetic is an FMA chain's over
// the widened values, k in order (measured on Zen 5: c + p[k], then
// + p[k+1], each rounded to nearest even; the products of two bfloat16
// values are exact in float32), except that it flushes denormals, as
// ggml's own bfloat16 kernel (the same instruction) does. Compiled for
// AVX512-BF16 where the build's level lacks it (x86-64-v4) and called only
// where the CPU has it.
static inline __attribute__((always_inline, target("avx512bf16"))) void tile_bf16_j(int J, int64_t kc, const float *a,
										      const float *b, float *c, int64_t ldc,
										      int64_t mr, int64_t nr, bool add) {
	__m512 acc[NR][2];
#pragma GCC unroll 12
	for (int j = 0; j < J; j++)
		acc[j][0] = _mm512_setzero_ps(), acc[j][1] = _mm512_setzero_ps();
	for (int64_t k = 0; k < kc; k++) {
		__m512 a0 = _mm512_load_ps(a), a1 = _mm512_load_ps(a + 16);
		__asm__("" : "+v"(a0), "+v"(a1));
#pragma GCC unroll 12
		for (int j = 0; j < J; j++) {
			const __m512bh bj = (__m512bh)_mm512_set1_ps(b[j]);
			acc[j][0] = _mm512_dpbf16_ps(acc[j][0], (__m512bh)a0, bj);
			acc[j][1] = _mm512_dpbf16_ps(acc[j][1], (__m512bh)a1, bj);
		}
		a += MR;
		b += NR;
	}
	store(acc, c, ldc, mr, nr, add);
}

__attribute__((noinline, target("avx512bf16"))) static void tile_bf16(int64_t kc, const float *a, const float *b, float *c,
								 int64_t ldc, int64_t mr, int64_t nr, bool add) {
	FEWEST_ROWS(tile_bf16_j, kc, a, b, c, ldc, mr, nr, add);
}

// has_bf16 says whether tile_bf16 runs on this CPU.
static bool has_bf16(void) {
#if defined(__AVX512BF16__)
	return true;
#else
	return __builtin_cpu_supports("avx512bf16");
#endif
}
#define UDGAM_GEMM_BF16 1
#else
typedef void tile_fn(int64_t, const float *, const float *, float *, int64_t, int64_t, int64_t, bool);

// tile multiplies a 16 x kc panel a of src0 by a 6 x kc panel b of src1
// into dst's rows j < nr (ldc apart), columns i < mr; add keeps what dst
// holds (the previous blocks of k). Not inlined: in its own function the
// loop has the 16 vector registers to itself (12 accumulators, 2 of a,
// 1 of b), where inlined GCC keeps the caller's constants in some and
// spills.
__attribute__((noinline)) static void tile(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr,
					   int64_t nr, bool add) {
	__m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
	__m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
	__m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
	__m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
	__m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
	__m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
	for (int64_t k = 0; k < kc; k++) {
		__m256 a0 = _mm256_load_ps(a), a1 = _mm256_load_ps(a + 8);
		// Keep both in registers: GCC would fold each load into all six
		// FMAs that use it, 18 loads per step where 8 are needed.
		__asm__("" : "+x"(a0), "+x"(a1));
		__m256 bj;
		bj = _mm256_broadcast_ss(b + 0), c00 = _mm256_fmadd_ps(a0, bj, c00), c01 = _mm256_fmadd_ps(a1, bj, c01);
		bj = _mm256_broadcast_ss(b + 1), c10 = _mm256_fmadd_ps(a0, bj, c10), c11 = _mm256_fmadd_ps(a1, bj, c11);
		bj = _mm256_broadcast_ss(b + 2), c20 = _mm256_fmadd_ps(a0, bj, c20), c21 = _mm256_fmadd_ps(a1, bj, c21);
		bj = _mm256_broadcast_ss(b + 3), c30 = _mm256_fmadd_ps(a0, bj, c30), c31 = _mm256_fmadd_ps(a1, bj, c31);
		bj = _mm256_broadcast_ss(b + 4), c40 = _mm256_fmadd_ps(a0, bj, c40), c41 = _mm256_fmadd_ps(a1, bj, c41);
		bj = _mm256_broadcast_ss(b + 5), c50 = _mm256_fmadd_ps(a0, bj, c50), c51 = _mm256_fmadd_ps(a1, bj, c51);
		a += MR;
		b += NR;
	}
	__m256 acc[NR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
	if (mr == MR) {
		for (int64_t j = 0; j < nr; j++) {
			float *cj = c + j * ldc;
			if (add) {
				acc[j][0] = _mm256_add_ps(acc[j][0], _mm256_loadu_ps(cj));
				acc[j][1] = _mm256_add_ps(acc[j][1], _mm256_loadu_ps(cj + 8));
			}
			_mm256_storeu_ps(cj, acc[j][0]);
			_mm256_storeu_ps(cj + 8, acc[j][1]);
		}
		return;
	}
	float t[MR];
	for (int64_t j = 0; j < nr; j++) {
		_mm256_storeu_ps(t, acc[j][0]);
		_mm256_storeu_ps(t + 8, acc[j][1]);
		float *cj = c + j * ldc;
		for (int64_t i = 0; i < mr; i++)
			cj[i] = add ? cj[i] + t[i] : t[i];
	}
}
#endif // AVX-512

// block_rows is how many of src0's rows rows() packs at a time, every k
// of them: about 384 KB of the core's L2 (128 rows at k = 576, 64 at
// 1,536), at least one tile.
static int64_t block_rows(int64_t k) {
	const int64_t r = 98304 / k / MR * MR;
	return r > MC ? MC : r < MR ? MR : r;
}

// rows_floats is the buffer rows() needs at k: block_rows(k) rows of src0,
// every k packed.
static int64_t rows_floats(int64_t k) { return block_rows(k) * k; }

// rows computes dst's columns i0..i1-1 (src0's rows) for all n rows of
// src1, from src1's packed panels, packing src0's rows block_rows(k) at a
// time, every k, into buf (rows_floats(k), 32-byte aligned). Each panel of
// src1 then goes through all blocks of k while its tiles of dst are in L1:
// with k outermost, dst went through memory once per block of k (the 50 MB
// of a 256-row part of the output head three times). Each output sums the
// same blocks in the same order either way: the same bits.
static void rows(tile_fn *tile, struct operand a, const float *bpack, int64_t n, int64_t k, float *c, int64_t ldc, int64_t i0,
		 int64_t i1, float *buf) {
	const int64_t kcmax = k_block(k), mc = block_rows(k);
	const size_t row = a.ld * kind_size(a.kind);
	for (int64_t b0 = i0; b0 < i1; b0 += mc) {
		const int64_t b1 = b0 + mc < i1 ? b0 + mc : i1;
		// Block k0 of k starts at buf + k0 * mc: the blocks before it
		// hold mc rows of k0 values.
		for (int64_t k0 = 0; k0 < k; k0 += kcmax) {
			const int64_t kc = k - k0 < kcmax ? k - k0 : kcmax;
			for (int64_t i = b0; i < b1; i += MR)
				pack((struct operand){a.x + i * row, a.ld, a.kind}, b1 - i < MR ? b1 - i : MR, MR, k0, kc,
				     buf + k0 * mc + (i - b0) * kc);
		}
		for (int64_t j = 0; j < n; j += NR) {
			const float *bp = bpack + (j / NR) * panel_floats(k);
			for (int64_t k0 = 0; k0 < k; k0 += kcmax) {
				const int64_t kc = k - k0 < kcmax ? k - k0 : kcmax;
				for (int64_t i = b0; i < b1; i += MR)
					tile(kc, buf + k0 * mc + (i - b0) * kc, bp + k0 * NR, c + j * ldc + i, ldc,
					     b1 - i < MR ? b1 - i : MR, n - j < NR ? n - j : NR, k0 > 0);
			}
		}
	}
}

#endif // AVX2 && FMA && F16C

#if defined(UDGAM_GEMM) && (!defined(UDGAM_GEMM_STANDALONE) || defined(UDGAM_GEMM_SHARES))
#include "ggml-cpu-impl.h"
#include "ggml.h"

// A thread's share of a product (gemm.c's and qgemm.c's): an even split
// of dst's batches times src0's MR-row tiles, taken one batch at a time by
// share_next: rows i0..i1-1 of src0's batch a (the one ggml broadcasts to
// dst's), into dst's batch c.
struct share {
	int64_t u, u1, tiles; // units u..u1-1 are left
	int64_t batch, i0, i1;
	const char *a;
	char *c;
};

static struct share share_of(const struct ggml_tensor *dst, int ith, int nth) {
	const int64_t tiles = (dst->src[0]->ne[1] + MR - 1) / MR, units = dst->ne[2] * dst->ne[3] * tiles;
	return (struct share){.u = units * ith / nth, .u1 = units * (ith + 1) / nth, .tiles = tiles};
}

static bool share_next(const struct ggml_tensor *dst, struct share *s) {
	if (s->u >= s->u1)
		return false;
	const struct ggml_tensor *a = dst->src[0];
	const int64_t batch = s->u / s->tiles, t0 = s->u % s->tiles;
	const int64_t t1 = (batch + 1) * s->tiles < s->u1 ? s->tiles : s->u1 - batch * s->tiles;
	const int64_t i2 = batch % dst->ne[2], i3 = batch / dst->ne[2];
	s->batch = batch;
	s->a = (const char *)a->data + i2 / (dst->ne[2] / a->ne[2]) * a->nb[2] + i3 / (dst->ne[3] / a->ne[3]) * a->nb[3];
	s->c = (char *)dst->data + i2 * dst->nb[2] + i3 * dst->nb[3];
	s->i0 = t0 * MR;
	s->i1 = t1 * MR < a->ne[1] ? t1 * MR : a->ne[1];
	s->u = batch * s->tiles + t1;
	return true;
}
#endif

#ifndef UDGAM_GEMM_STANDALONE
#include "ggml-cpu-impl.h"
#include "ggml.h"

#ifdef UDGAM_GEMM
enum {
	// Fewest rows of src1 worth packing: each of src0's values is packed
	// once per product, which pays for itself over about 100 rows of src1
	// (float16 and bfloat16 widened as packed), but over 32 at k up to
	// SHORT_K (attention's scores, where tinyBLAS is slow at k = 64).
	// Float32 weights are copied as packed: on AVX-512 (Zen 5) they too
	// need 128 rows against tinyBLAS's 16 lanes, while on AVX2 (Zen 3)
	// 32 was measured to pay, and stays (BENCHMARKS.md). With fewer,
	// tinyBLAS keeps the product (decoding few tokens at a time).
	MIN_ROWS = 128,
	MIN_ROWS_SHORT_K = 32,
	SHORT_K = 128,
#ifdef __AVX512F__
	MIN_ROWS_F32 = MIN_ROWS,
#else
	MIN_ROWS_F32 = MIN_ROWS_SHORT_K,
#endif
	// Fewest rows of src0: with fewer, each packed value of src1 serves
	// too few products to pay for its packing (attention's 64-row
	// transposed values run faster in tinyBLAS, BENCHMARKS.md).
	MIN_SRC0_ROWS = 128,
};
// Most bytes of src1's panels; a larger product stays with tinyBLAS, so
// the work buffer stays about the size of the activations.
static const size_t max_panels = (size_t)64 << 20;

static size_t panel_bytes(const struct ggml_tensor *dst) {
	const struct ggml_tensor *b = dst->src[1];
	return b->ne[2] * b->ne[3] * panels(b->ne[1]) * panel_floats(b->ne[0]) * sizeof(float);
}

static int64_t min_rows(const struct ggml_tensor *a) {
	if (a->type != GGML_TYPE_F32) {
		return MIN_ROWS;
	}
	return a->ne[0] <= SHORT_K ? MIN_ROWS_SHORT_K : MIN_ROWS_F32;
}

static bool takes(const struct ggml_tensor *dst) {
	const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
	return dst->op == GGML_OP_MUL_MAT && dst->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32 &&
	       (a->type == GGML_TYPE_F16 || a->type == GGML_TYPE_BF16 || a->type == GGML_TYPE_F32) &&
	       a->ne[1] >= MIN_SRC0_ROWS && b->ne[1] >= min_rows(a) &&
	       a->nb[0] == ggml_type_size(a->type) && b->nb[0] == sizeof(float) && dst->nb[0] == sizeof(float) &&
	       a->nb[1] % a->nb[0] == 0 && b->nb[1] % sizeof(float) == 0 && dst->nb[1] % sizeof(float) == 0 &&
	       b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0 && panel_bytes(dst) <= max_panels;
}

// A thread's block of src0 at k, or at k/2 as bfloat16 pairs (where
// block_rows may take more rows).
static size_t thread_floats(int64_t k) {
	const int64_t f = rows_floats(k), p = rows_floats(k / 2 > 0 ? k / 2 : 1);
	return (f > p ? f : p) + 16;
}

// work_bytes is the work buffer a product takes needs with n_threads:
// src1's panels, then each thread's block of src0, each aligned to 64.
static size_t work_bytes(const struct ggml_tensor *dst, int n_threads) {
	return 64 + panel_bytes(dst) + n_threads * thread_floats(dst->src[0]->ne[0]) * sizeof(float);
}

static float *align64(void *p) { return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }
#endif // UDGAM_GEMM

// udgam_gemm_wsize is the work buffer udgam_gemm needs for dst with
// n_threads, 0 when it leaves dst to ggml.
size_t udgam_gemm_wsize(const struct ggml_tensor *dst, int n_threads) {
#ifdef UDGAM_GEMM
	return takes(dst) ? work_bytes(dst, n_threads) : 0;
#else
	(void)dst, (void)n_threads;
	return 0;
#endif
}

// udgam_gemm computes dst on every thread of params and returns true, or
// returns false, having done nothing, when it leaves dst to ggml.
bool udgam_gemm(const struct ggml_compute_params *params, struct ggml_tensor *dst) {
#ifdef UDGAM_GEMM
	if (!takes(dst))
		return false;
	const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
	const int64_t k = a->ne[0], n = b->ne[1];
	const int ith = params->ith, nth = params->nth;
	GGML_ASSERT(params->wsize >= work_bytes(dst, nth));
	enum kind akind = a->type == GGML_TYPE_F16 ? F16 : a->type == GGML_TYPE_BF16 ? BF16 : F32;
	enum kind bkind = akind == F16 ? F32_AS_F16 : akind == BF16 ? F32_AS_BF16 : F32;
	// Elements of k as packed: pairs of bfloat16 values for vdpbf16ps.
	int64_t kp = k;
	tile_fn *kernel = tile;
#ifdef UDGAM_GEMM_BF16
	if (akind == BF16 && k % 2 == 0 && a->nb[1] % 4 == 0 && b->nb[1] % 8 == 0 && has_bf16()) {
		akind = F32, bkind = F32_AS_BF16_PAIRS, kp = k / 2;
		kernel = tile_bf16;
	}
#endif
	const size_t ael = akind == F32 ? 4 : 2;

	// src1's panels, batch after batch, shared out among the threads.
	float *bpack = align64(params->wdata);
	const int64_t bpanels = panels(n);
	for (int64_t u = ith; u < b->ne[2] * b->ne[3] * bpanels; u += nth) {
		const int64_t batch = u / bpanels, j = u % bpanels * NR;
		const char *x = (const char *)b->data + batch % b->ne[2] * b->nb[2] + batch / b->ne[2] * b->nb[3] + j * b->nb[1];
		pack((struct operand){x, b->nb[1] / kind_size(bkind), bkind}, n - j < NR ? n - j : NR, NR, 0, kp,
		     bpack + u * panel_floats(kp));
	}
	ggml_barrier(params->threadpool);

	// Each thread takes its share (share_of).
	float *buf = align64(bpack + b->ne[2] * b->ne[3] * bpanels * panel_floats(kp) + ith * thread_floats(k));
	for (struct share s = share_of(dst, ith, nth); share_next(dst, &s);)
		rows(kernel, (struct operand){s.a, a->nb[1] / ael, akind}, bpack + s.batch * bpanels * panel_floats(kp), n, kp,
		     (float *)s.c, dst->nb[1] / sizeof(float), s.i0, s.i1, buf);
	return true;
#else
	(void)params, (void)dst;
	return false;
#endif
}
#endif // !UDGAM_GEMM_STANDALONE
