//go:build cgo

#include <math.h>
#include "score.h"
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static bool udgam_abort(void *data) { return *(volatile int *)data != 0; }

void udgam_set_abort(struct llama_context *ctx, int *flag) {
	llama_set_abort_callback(ctx, udgam_abort, flag);
}

// The log-softmax's exponential, vectorized the same way on every build so
// that a row's sum has the same bits on AVX-512, AVX2 and NEON: element i
// goes to double lane i % 16 and the 16 lanes are added in one fixed tree.
// exp(t) for t <= 0 is 2^k exp(r), k = rint(t log2 e), |r| <= ln2/2, and
// exp(r) = 1 + r + r^2 (C2 + r (C3 + r (C4 + r (C5 + r C6)))), the Cs
// fitted for relative error (3.6e-9, 0.06 ulp, after rounding to float), so
// the float rounding of the evaluation decides the error (under 1 ulp).
#define EXP_C2 0x1.fffffcp-2f
#define EXP_C3 0x1.555492p-3f
#define EXP_C4 0x1.5558f2p-5f
#define EXP_C5 0x1.123a20p-7f
#define EXP_C6 0x1.6a23d0p-10f
#define EXP_LOG2E 0x1.715476p+0f
#define EXP_LN2_HI 0x1.62e430p-1f
#define EXP_LN2_LO -0x1.05c610p-29f
// Below ln(2^-126) the result would be subnormal; it is taken as 0, which
// moves a sum that holds exp(0) = 1 by less than 2^-126 per term.
#define EXP_MIN -0x1.5d58a0p+6f
#define EXP_LANES 16

#if defined(__FMA__) || defined(__aarch64__)
#define EXP_FMA(a, b, c) fmaf(a, b, c)
#else
// No FMA unit (x86-64-v2): the product is exact in double and the sum
// rounds twice, which differs from a fused result in the last bit on rare
// inputs, so this build's sums may differ from the others' in the last bits.
#define EXP_FMA(a, b, c) ((float)((double)(a) * (double)(b) + (double)(c)))
#endif

// expneg is one lane of the vector code below, operation for operation.
static inline float expneg(float t) {
	if (!(t >= EXP_MIN)) {
		return 0;
	}
	float k = rintf(t * EXP_LOG2E);
	float r = EXP_FMA(-k, EXP_LN2_HI, t);
	r = EXP_FMA(-k, EXP_LN2_LO, r);
	float p = EXP_FMA(EXP_C6, r, EXP_C5);
	p = EXP_FMA(p, r, EXP_C4);
	p = EXP_FMA(p, r, EXP_C3);
	p = EXP_FMA(p, r, EXP_C2);
	float y = EXP_FMA(p, r * r, r) + 1.0f;
	union {
		uint32_t u;
		float f;
	} s = {.u = (uint32_t)((int32_t)k + 127) << 23};
	return y * s.f;
}

#if defined(__AVX512F__)
#include <immintrin.h>

static inline __m512 expneg16(__m512 t) {
	__m512 k = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(EXP_LOG2E)),
	                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(EXP_LN2_HI), t);
	r = _mm512_fnmadd_ps(k, _mm512_set1_ps(EXP_LN2_LO), r);
	__m512 p = _mm512_fmadd_ps(_mm512_set1_ps(EXP_C6), r, _mm512_set1_ps(EXP_C5));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_C4));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_C3));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_C2));
	__m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
	__m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(127)), 23);
	__mmask16 ok = _mm512_cmp_ps_mask(t, _mm512_set1_ps(EXP_MIN), _CMP_GE_OQ);
	return _mm512_maskz_mul_ps(ok, y, _mm512_castsi512_ps(e));
}

// sumexp_blocks adds the exponentials of x[0..16*nb-1] into acc's lanes.
static void sumexp_blocks(const float *x, int nb, float max, double acc[EXP_LANES]) {
	__m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
	__m512 m = _mm512_set1_ps(max);
	for (int b = 0; b < nb; b++) {
		__m512 e = expneg16(_mm512_sub_ps(_mm512_loadu_ps(x + 16 * b), m));
		lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
		hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
	}
	_mm512_storeu_pd(acc, lo);
	_mm512_storeu_pd(acc + 8, hi);
}

static float rowmax_blocks(const float *x, int nb, int *bad) {
	__m512 m0 = _mm512_set1_ps(x[0]), m1 = m0;
	__mmask16 b0 = 0, b1 = 0;
	int b = 0;
	for (; b + 2 <= nb; b += 2) {
		__m512 v0 = _mm512_loadu_ps(x + 16 * b), v1 = _mm512_loadu_ps(x + 16 * b + 16);
		// x - x is 0 exactly when x is finite.
		b0 |= _mm512_cmp_ps_mask(_mm512_sub_ps(v0, v0), _mm512_setzero_ps(), _CMP_NEQ_UQ);
		b1 |= _mm512_cmp_ps_mask(_mm512_sub_ps(v1, v1), _mm512_setzero_ps(), _CMP_NEQ_UQ);
		m0 = _mm512_max_ps(m0, v0);
		m1 = _mm512_max_ps(m1, v1);
	}
	if (b < nb) {
		__m512 v0 = _mm512_loadu_ps(x + 16 * b);
		b0 |= _mm512_cmp_ps_mask(_mm512_sub_ps(v0, v0), _mm512_setzero_ps(), _CMP_NEQ_UQ);
		m0 = _mm512_max_ps(m0, v0);
	}
	*bad |= (b0 | b1) != 0;
	return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

static inline __m256 expneg8(__m256 t) {
	__m256 k = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(EXP_LOG2E)),
	                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(EXP_LN2_HI), t);
	r = _mm256_fnmadd_ps(k, _mm256_set1_ps(EXP_LN2_LO), r);
	__m256 p = _mm256_fmadd_ps(_mm256_set1_ps(EXP_C6), r, _mm256_set1_ps(EXP_C5));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_C4));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_C3));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_C2));
	__m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
	__m256 ok = _mm256_cmp_ps(t, _mm256_set1_ps(EXP_MIN), _CMP_GE_OQ);
	return _mm256_and_ps(ok, _mm256_mul_ps(y, _mm256_castsi256_ps(e)));
}

static void sumexp_blocks(const float *x, int nb, float max, double acc[EXP_LANES]) {
	__m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
	__m256 m = _mm256_set1_ps(max);
	for (int b = 0; b < nb; b++) {
		__m256 e0 = expneg8(_mm256_sub_ps(_mm256_loadu_ps(x + 16 * b), m));
		__m256 e1 = expneg8(_mm256_sub_ps(_mm256_loadu_ps(x + 16 * b + 8), m));
		a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(e0)));
		a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(e0, 1)));
		a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm256_castps256_ps128(e1)));
		a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm256_extractf128_ps(e1, 1)));
	}
	_mm256_storeu_pd(acc, a0);
	_mm256_storeu_pd(acc + 4, a1);
	_mm256_storeu_pd(acc + 8, a2);
	_mm256_storeu_pd(acc + 12, a3);
}

static float rowmax_blocks(const float *x, int nb, int *bad) {
	__m256 m0 = _mm256_set1_ps(x[0]), m1 = m0, nf = _mm256_setzero_ps();
	for (int b = 0; b < nb; b++) {
		__m256 v0 = _mm256_loadu_ps(x + 16 * b), v1 = _mm256_loadu_ps(x + 16 * b + 8);
		// x - x is 0 exactly when x is finite.
		nf = _mm256_or_ps(nf, _mm256_cmp_ps(_mm256_sub_ps(v0, v0), _mm256_setzero_ps(), _CMP_NEQ_UQ));
		nf = _mm256_or_ps(nf, _mm256_cmp_ps(_mm256_sub_ps(v1, v1), _mm256_setzero_ps(), _CMP_NEQ_UQ));
		m0 = _mm256_max_ps(m0, v0);
		m1 = _mm256_max_ps(m1, v1);
	}
	*bad |= _mm256_movemask_ps(nf) != 0;
	float l[8];
	_mm256_storeu_ps(l, _mm256_max_ps(m0, m1));
	float mx = l[0];
	for (int j = 1; j < 8; j++) {
		mx = l[j] > mx ? l[j] : mx;
	}
	return mx;
}

#elif defined(__ARM_NEON) && defined(__aarch64__)
#include <arm_neon.h>

static inline float32x4_t expneg4(float32x4_t t) {
	float32x4_t k = vrndnq_f32(vmulq_f32(t, vdupq_n_f32(EXP_LOG2E)));
	float32x4_t r = vfmsq_f32(t, k, vdupq_n_f32(EXP_LN2_HI));
	r = vfmsq_f32(r, k, vdupq_n_f32(EXP_LN2_LO));
	float32x4_t p = vfmaq_f32(vdupq_n_f32(EXP_C5), vdupq_n_f32(EXP_C6), r);
	p = vfmaq_f32(vdupq_n_f32(EXP_C4), p, r);
	p = vfmaq_f32(vdupq_n_f32(EXP_C3), p, r);
	p = vfmaq_f32(vdupq_n_f32(EXP_C2), p, r);
	float32x4_t y = vaddq_f32(vfmaq_f32(r, p, vmulq_f32(r, r)), vdupq_n_f32(1.0f));
	int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(k), vdupq_n_s32(127)), 23);
	uint32x4_t ok = vcgeq_f32(t, vdupq_n_f32(EXP_MIN));
	return vreinterpretq_f32_u32(vandq_u32(ok, vreinterpretq_u32_f32(vmulq_f32(y, vreinterpretq_f32_s32(e)))));
}

static void sumexp_blocks(const float *x, int nb, float max, double acc[EXP_LANES]) {
	float64x2_t a[8];
	for (int j = 0; j < 8; j++) {
		a[j] = vdupq_n_f64(0);
	}
	float32x4_t m = vdupq_n_f32(max);
	for (int b = 0; b < nb; b++) {
		for (int q = 0; q < 4; q++) {
			float32x4_t e = expneg4(vsubq_f32(vld1q_f32(x + 16 * b + 4 * q), m));
			a[2 * q] = vaddq_f64(a[2 * q], vcvt_f64_f32(vget_low_f32(e)));
			a[2 * q + 1] = vaddq_f64(a[2 * q + 1], vcvt_high_f64_f32(e));
		}
	}
	for (int j = 0; j < 8; j++) {
		vst1q_f64(acc + 2 * j, a[j]);
	}
}

static float rowmax_blocks(const float *x, int nb, int *bad) {
	float32x4_t m[4];
	uint32x4_t nf = vdupq_n_u32(0);
	for (int q = 0; q < 4; q++) {
		m[q] = vdupq_n_f32(x[0]);
	}
	for (int b = 0; b < nb; b++) {
		for (int q = 0; q < 4; q++) {
			float32x4_t v = vld1q_f32(x + 16 * b + 4 * q);
			// x - x is 0 exactly when x is finite.
			nf = vorrq_u32(nf, vmvnq_u32(vceqq_f32(vsubq_f32(v, v), vdupq_n_f32(0))));
			m[q] = vmaxq_f32(m[q], v);
		}
	}
	*bad |= vmaxvq_u32(nf) != 0;
	return vmaxvq_f32(vmaxq_f32(vmaxq_f32(m[0], m[1]), vmaxq_f32(m[2], m[3])));
}

#else

static void sumexp_blocks(const float *x, int nb, float max, double acc[EXP_LANES]) {
	for (int j = 0; j < EXP_LANES; j++) {
		acc[j] = 0;
	}
	for (int b = 0; b < nb; b++) {
		for (int j = 0; j < EXP_LANES; j++) {
			acc[j] += (double)expneg(x[EXP_LANES * b + j] - max);
		}
	}
}

static float rowmax_blocks(const float *x, int nb, int *bad) {
	float mx = x[0];
	int b = 0;
	for (int i = 0; i < EXP_LANES * nb; i++) {
		b |= !isfinite(x[i]);
		mx = x[i] > mx ? x[i] : mx;
	}
	*bad |= b;
	return mx;
}

#endif

float udgam_row_max(const float *x, int n, int *bad) {
	int nb = n / EXP_LANES, b = 0;
	float mx = nb > 0 ? rowmax_blocks(x, nb, &b) : x[0];
	for (int i = EXP_LANES * nb; i < n; i++) {
		b |= !isfinite(x[i]);
		mx = x[i] > mx ? x[i] : mx;
	}
	if (b) {
		*bad = 1;
	}
	return mx;
}

double udgam_sum_exp(const float *x, int n, float max) {
	double acc[EXP_LANES];
	int nb = n / EXP_LANES;
	sumexp_blocks(x, nb, max, acc);
	for (int i = EXP_LANES * nb; i < n; i++) {
		acc[i % EXP_LANES] += (double)expneg(x[i] - max);
	}
	for (int w = EXP_LANES / 2; w > 0; w /= 2) {
		for (int j = 0; j < w; j++) {
			acc[j] += acc[j + w];
		}
	}
	return acc[0];
}

double udgam_logsumexp(const float *row, int n) {
	int bad = 0;
	float mx = udgam_row_max(row, n, &bad);
	if (bad) {
		return NAN;
	}
	return (double)mx + log(udgam_sum_exp(row, n, mx));
}

void udgam_batch_set(struct llama_batch *b, int i, llama_token tok, llama_pos pos,
                     const llama_seq_id *seqs, int nseq, int8_t logits) {
	b->token[i] = tok;
	b->pos[i] = pos;
	b->n_seq_id[i] = nseq;
	for (int s = 0; s < nseq; s++) {
		b->seq_id[i][s] = seqs[s];
	}
	b->logits[i] = logits;
}

int udgam_pair(const float *a, const float *b, int n, double *lse_a, double *lse_b,
               double *kl, int *top_a, int *top_b) {
	float ma = a[0], mb = b[0];
	int ta = 0, tb = 0;
	for (int i = 0; i < n; i++) {
		if (!isfinite(a[i]) || !isfinite(b[i])) {
			return -1;
		}
		if (a[i] > ma) { ma = a[i]; ta = i; }
		if (b[i] > mb) { mb = b[i]; tb = i; }
	}
	// KL = sum p_i ((a_i - la) - (b_i - lb)) = sum e_i (a_i - b_i) / sa - la + lb
	// with e_i = exp(a_i - ma): one pass, two exponentials per token.
	double sa = 0, sb = 0, sab = 0;
	for (int i = 0; i < n; i++) {
		double e = exp((double)a[i] - ma);
		sa += e;
		sab += e * ((double)a[i] - (double)b[i]);
		sb += exp((double)b[i] - mb);
	}
	double la = ma + log(sa), lb = mb + log(sb);
	double k = sab / sa - la + lb;
	*lse_a = la;
	*lse_b = lb;
	*kl = k;
	*top_a = ta;
	*top_b = tb;
	return 0;
}

long long udgam_logits_bytes(struct llama_context *ctx) {
#if defined(__GLIBC__)
	float *logits = llama_get_logits(ctx);
	return logits == NULL ? 0 : (long long)malloc_usable_size(logits);
#else
	(void)ctx;
	return -1;
#endif
}
