// udgam-ci's matrix product for float16 weights on x86 with AVX2, FMA and
// F16C, installed into ggml-cpu by scripts/engine.sh (its header says why).
//
// C[n][m] = sum_k A[m][k] * B[n][k]: A is the weight matrix (float16, one
// row per output feature), B the activations (float32 rows, rounded to
// float16 exactly as ggml rounds them before tinyBLAS), C float32.
// tinyBLAS takes both operands as they lie, K contiguous, and widens both
// to float32 in every tile: 7 conversions and loads per 12 FMAs. Here both
// are widened once into panels laid out k by k (B shared by all threads,
// each thread's slice of A in its own buffer), and a 16x6 outer-product
// kernel then issues 2 loads and 6 broadcasts per 12 FMAs with no
// conversion. Every product is of the same two float16 values, summed in
// float32 in another order, so results differ from tinyBLAS's only by
// float32 rounding.
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define UDGAM_GEMM 1

enum {
	MR = 16,  // rows of A per tile: two vectors
	NR = 6,   // rows of B per tile: 12 accumulators, 2 loads, 1 broadcast
	KC = 320, // most k per block: a 16 x KC panel of A (20 KB) beside a 6 x KC one of B in L1
	MC = 128, // rows of A packed per block: 128 x KC floats (160 KB) in L2
};

// Blocks of k as even as KC allows, a multiple of 8 when k is.
static int64_t k_block(int64_t k) {
	int64_t n = (k + KC - 1) / KC;
	int64_t kc = (k + n - 1) / n;
	return (kc + 7) & ~(int64_t)7;
}

// B's panels: rows n0..n0+5 of B, every k, 6 floats per k; a panel holds
// NR*k floats plus 8 of slack for the last overlapping store.
static int64_t panel_floats(int64_t k) { return NR * k + 8; }

static inline __m256 round_f16(__m256 x) {
	return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
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

// pack_b writes rows n0..n0+nr-1 (nr <= 6; missing rows are zero) of B,
// each rounded to float16, as one panel: out[k*6 + j] = B[n0+j][k].
static void pack_b(const float *b, int64_t ldb, int64_t nr, int64_t k, float *out) {
	int64_t kk = 0;
	for (; kk + 8 <= k; kk += 8) {
		__m256 r[8];
		for (int j = 0; j < 8; j++)
			r[j] = j < nr ? round_f16(_mm256_loadu_ps(b + j * ldb + kk)) : _mm256_setzero_ps();
		transpose8(r);
		// Each store writes 8 floats where 6 belong; the next one
		// overwrites the 2 extra, and the panel's slack takes the last.
		for (int t = 0; t < 8; t++)
			_mm256_storeu_ps(out + (kk + t) * NR, r[t]);
	}
	for (; kk < k; kk++)
		for (int j = 0; j < NR; j++)
			out[kk * NR + j] = j < nr ? _cvtsh_ss(_cvtss_sh(b[j * ldb + kk], _MM_FROUND_TO_NEAREST_INT)) : 0;
}

// pack_a widens rows m0..m0+mr-1 (mr <= 16; missing rows are zero) of A
// over k0..k0+kc-1 into one panel: out[k*16 + i] = A[m0+i][k0+k].
static void pack_a(const uint16_t *a, int64_t lda, int64_t mr, int64_t kc, float *out) {
	int64_t kk = 0;
	for (; kk + 8 <= kc; kk += 8) {
		for (int h = 0; h < MR; h += 8) {
			__m256 r[8];
			for (int i = 0; i < 8; i++)
				r[i] = h + i < mr ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + (h + i) * lda + kk)))
						  : _mm256_setzero_ps();
			transpose8(r);
			for (int t = 0; t < 8; t++)
				_mm256_store_ps(out + (kk + t) * MR + h, r[t]);
		}
	}
	for (; kk < kc; kk++)
		for (int i = 0; i < MR; i++)
			out[kk * MR + i] = i < mr ? _cvtsh_ss(a[i * lda + kk]) : 0;
}

// tile multiplies a 16 x kc panel of A by a 6 x kc panel of B into C's
// rows n0..n0+nr-1, columns m0..m0+mr-1; add keeps what C holds (the
// previous blocks of k).
static void tile(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr, int64_t nr, bool add) {
	__m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
	__m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
	__m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
	__m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
	__m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
	__m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
	for (int64_t k = 0; k < kc; k++) {
		const __m256 a0 = _mm256_load_ps(a), a1 = _mm256_load_ps(a + 8);
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
		for (int j = 0; j < nr; j++) {
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
	for (int j = 0; j < nr; j++) {
		_mm256_storeu_ps(t, acc[j][0]);
		_mm256_storeu_ps(t + 8, acc[j][1]);
		float *cj = c + j * ldc;
		for (int i = 0; i < mr; i++)
			cj[i] = add ? cj[i] + t[i] : t[i];
	}
}

// rows computes C's columns m0..m1-1 (a multiple of 16 apart, but for the
// last) for every row of B, from B's packed panels; apack holds MC x KC
// floats, 32-byte aligned.
static void rows(const uint16_t *a, int64_t lda, const float *bpack, int64_t n, int64_t k, float *c, int64_t ldc,
		 int64_t m0, int64_t m1, float *apack) {
	const int64_t kcmax = k_block(k);
	for (int64_t k0 = 0; k0 < k; k0 += kcmax) {
		const int64_t kc = k - k0 < kcmax ? k - k0 : kcmax;
		for (int64_t i0 = m0; i0 < m1; i0 += MC) {
			const int64_t i1 = i0 + MC < m1 ? i0 + MC : m1;
			for (int64_t i = i0; i < i1; i += MR)
				pack_a(a + i * lda + k0, lda, i1 - i < MR ? i1 - i : MR, kc, apack + (i - i0) * kc);
			for (int64_t j = 0; j < n; j += NR) {
				const float *bp = bpack + (j / NR) * panel_floats(k) + k0 * NR;
				for (int64_t i = i0; i < i1; i += MR)
					tile(kc, apack + (i - i0) * kc, bp, c + j * ldc + i, ldc, i1 - i < MR ? i1 - i : MR,
					     n - j < NR ? n - j : NR, k0 > 0);
			}
		}
	}
}

static int64_t panels(int64_t n) { return (n + NR - 1) / NR; }

#endif // AVX2 && FMA && F16C

#ifndef UDGAM_GEMM_STANDALONE
#include "ggml-cpu-impl.h"
#include "ggml.h"

// Smallest batch worth packing: below it tinyBLAS (or ggml's dot products)
// keep the work, as decoding a few tokens at a time is bound by reading
// the weights, not by arithmetic.
enum { MIN_ROWS = 32 };

static bool udgam_gemm_takes(const struct ggml_tensor *dst) {
#ifdef UDGAM_GEMM
	const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
	return dst->op == GGML_OP_MUL_MAT && a->type == GGML_TYPE_F16 && b->type == GGML_TYPE_F32 &&
	       dst->type == GGML_TYPE_F32 && a->ne[2] == 1 && a->ne[3] == 1 && b->ne[2] == 1 && b->ne[3] == 1 &&
	       b->ne[1] >= MIN_ROWS && a->nb[0] == sizeof(uint16_t) && b->nb[0] == sizeof(float) &&
	       dst->nb[0] == sizeof(float) && a->nb[1] % sizeof(uint16_t) == 0 && b->nb[1] % sizeof(float) == 0 &&
	       dst->nb[1] % sizeof(float) == 0;
#else
	(void)dst;
	return false;
#endif
}

// udgam_gemm_wsize is the work buffer a matrix product this file takes
// needs with n_threads: B's panels, then each thread's block of A, each
// aligned to 64 bytes.
size_t udgam_gemm_wsize(const struct ggml_tensor *dst, int n_threads) {
#ifdef UDGAM_GEMM
	if (!udgam_gemm_takes(dst))
		return 0;
	const int64_t k = dst->src[0]->ne[0], n = dst->src[1]->ne[1];
	return 64 + panels(n) * panel_floats(k) * sizeof(float) + n_threads * (MC * k_block(k) * sizeof(float) + 64);
#else
	(void)dst, (void)n_threads;
	return 0;
#endif
}

static float *align64(void *p) { return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

// udgam_gemm computes dst when this file takes it, on every thread of
// params, and returns false (having done nothing) otherwise.
bool udgam_gemm(const struct ggml_compute_params *params, struct ggml_tensor *dst) {
#ifdef UDGAM_GEMM
	if (!udgam_gemm_takes(dst))
		return false;
	const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
	const int64_t m = a->ne[1], k = a->ne[0], n = b->ne[1];
	const int64_t lda = a->nb[1] / sizeof(uint16_t), ldb = b->nb[1] / sizeof(float), ldc = dst->nb[1] / sizeof(float);
	const int ith = params->ith, nth = params->nth;
	GGML_ASSERT(params->wsize >= udgam_gemm_wsize(dst, nth));

	float *bpack = align64(params->wdata);
	for (int64_t p = ith; p < panels(n); p += nth) {
		const int64_t j = p * NR;
		pack_b((const float *)b->data + j * ldb, ldb, n - j < NR ? n - j : NR, k, bpack + p * panel_floats(k));
	}
	ggml_barrier(params->threadpool);

	// Each thread takes an even share of A's 16-row tiles.
	const int64_t tiles = (m + MR - 1) / MR;
	const int64_t t0 = tiles * ith / nth, t1 = tiles * (ith + 1) / nth;
	float *apack = align64((char *)(bpack + panels(n) * panel_floats(k)) + ith * (MC * k_block(k) * sizeof(float) + 64));
	if (t0 < t1)
		rows((const uint16_t *)a->data, lda, bpack, n, k, (float *)dst->data, ldc, t0 * MR,
		     t1 * MR < m ? t1 * MR : m, apack);
	return true;
#else
	(void)params, (void)dst;
	return false;
#endif
}
#endif // !UDGAM_GEMM_STANDALONE
