// udgam-ci's attention for ggml-cpu's GGML_OP_FLASH_ATTN_EXT on x86 with
// AVX-512, installed by scripts/engine.sh (its header says why).
//
// ggml's own CPU flash attention takes one query row and one key at a time
// (a dot product, then one row of V scaled into the output) and, with a
// float16 V, keeps its running output in float16. Here a task is one head
// and a block of up to QB queries: the queries are packed transposed (one
// 16-lane vector holds 16 queries). A first pass computes the scores K.Q^T
// of every block of KB keys whose mask is not all -inf for those queries,
// keeps them, and takes each query's maximum over all its keys; a second
// takes the probabilities against that maximum and adds them and P.V into
// a sum and output (held transposed) in double, key after key. The output
// is divided by the sum at the end and rounded to float32 once. Scores and
// probabilities are float32 (float16 keys and values are widened exactly),
// every product p*v is exact in double; the mask decides
// per tile which blocks are skipped, so causal, packed-sequence and
// sliding-window masks all keep ggml's meaning.
//
// Two passes, not an online softmax, and sums in double, so that a query's
// bits do not depend on where its keys' cells lie in the cache: a key the
// mask hides adds exactly 0, a query's maximum is the same in any
// grouping, nothing is rescaled, and the order of the cells (llama.cpp
// fills freed cells, so a packed sequence's keys need not lie in position
// order) moves a double sum by about 1e-16 of itself, which the one
// rounding to float32 absorbs unless the sum falls that close to a
// rounding boundary. A sequence packed into a shared cache beside others
// gets the same bits as alone. The online softmax rescaled at each 64-key
// block boundary, and quantized weights' 8-bit activations turned that
// last-bit difference into whole quantization steps (2% of a document's
// bits on Gemma 3 Q4_K_M, issue 40).
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// AVX-512BW for the mask's 16-bit lanes, F16C for single float16 values.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__F16C__)
#include <immintrin.h>
#define UDGAM_ATTN 1

enum {
	QB = 64, // queries per task: 4 vectors of 16
	KB = 64, // keys per block
	JR = 4,  // keys per score micro-tile (4 x NV accumulators)
	DR = 4,  // output dimensions v's width must be a multiple of
	DD = 2,  // output dimensions per P.V micro-tile (DD x 2NV double accumulators)
};

// attn is one FLASH_ATTN_EXT as plain pointers and byte strides.
struct attn {
	const char *q, *k, *v, *mask;
	float *dst;
	size_t q1, q2, q3;       // query: row (token), head, sequence
	size_t k1, k2, k3;       // key: row (cell), head, sequence
	size_t v1, v2, v3;       // value: same
	size_t m1, m2, m3;       // mask: row (query), head, sequence
	size_t d1;               // output row (one head of one token)
	int64_t n_q, n_kv;       // queries per head, keys
	int64_t dk, dv;          // head sizes
	int64_t heads, seqs;     // query heads and sequences
	int64_t rk2, rk3;        // query heads per key head, sequences per key sequence
	int64_t rv2, rv3;        // same for values
	int64_t mh, ms;          // mask broadcast: heads, sequences it holds
	bool k_f16, v_f16;
	float scale;
};

// buf is one thread's scratch, 64-byte aligned.
struct buf {
	float *qt;   // dk x QB: the block's queries, transposed and scaled
	float *st;   // n_kv x QB (whole blocks): scores, then probabilities, transposed
	double *ot;  // dv x QB: the output, transposed, in double
	float *kf;   // KB x dk: a float16 key block widened
	float *vf;   // KB x dv: a float16 value block widened
	float *m;    // QB: maximum per query
	double *l;   // QB: sum per query, in double
	unsigned char *tiles; // n_kv / KB: each key block's enum tile
	void *mem;
};

static bool buf_init(struct buf *b, int64_t dk, int64_t dv, int64_t n_kv) {
	const int64_t nt = (n_kv + KB - 1) / KB;
	size_t n = (size_t)dk * QB + (size_t)nt * KB * QB + 2 * (size_t)dv * QB + (size_t)KB * dk + (size_t)KB * dv + 3 * QB +
	           ((size_t)nt + 3) / 4;
	b->mem = aligned_alloc(64, (n * sizeof(float) + 63) & ~(size_t)63);
	if (b->mem == NULL) {
		return false;
	}
	float *p = b->mem;
	b->qt = p, p += dk * QB;
	b->st = p, p += nt * KB * QB;
	b->ot = (double *)p, p += 2 * dv * QB;
	b->kf = p, p += KB * dk;
	b->vf = p, p += KB * dv;
	b->m = p, p += QB;
	b->l = (double *)p, p += 2 * QB;
	b->tiles = (unsigned char *)p;
	return true;
}

// exp16 is e^x in float32 for x <= 0 (the only arguments here), within
// about 1 ulp: x = n ln2 + r with |r| <= ln2/2, e^r by its Taylor series
// to r^7 (truncation below 1e-8 relative), then scaled by 2^n, which
// flushes to 0 below float32's range (x < -104, -inf included).
static inline __m512 exp16(__m512 x) {
	x = _mm512_max_ps(x, _mm512_set1_ps(-120.0f));
	const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
	                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	// ln2 in two parts; the first has 16 significant bits, so n times it
	// is exact for |n| < 256.
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723e-6f), r);
	__m512 p = _mm512_set1_ps(1.0f / 5040);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	return _mm512_scalef_ps(p, n);
}

#define ALWAYS_INLINE static inline __attribute__((always_inline))

// scores writes st[j][i] = sum_d k[j][d] qt[d][i] for rows j of k (kr
// floats apart), NV vectors of queries, J keys.
ALWAYS_INLINE void scores(int NV, int J, const float *k, size_t kr, const float *qt, int64_t dk, float *st) {
	__m512 acc[JR][4];
#pragma GCC unroll 4
	for (int j = 0; j < J; j++)
#pragma GCC unroll 4
		for (int v = 0; v < NV; v++)
			acc[j][v] = _mm512_setzero_ps();
	for (int64_t d = 0; d < dk; d++) {
		__m512 q[4];
#pragma GCC unroll 4
		for (int v = 0; v < NV; v++)
			q[v] = _mm512_load_ps(qt + d * QB + 16 * v);
#pragma GCC unroll 4
		for (int j = 0; j < J; j++) {
			const __m512 kb = _mm512_set1_ps(k[j * kr + d]);
#pragma GCC unroll 4
			for (int v = 0; v < NV; v++)
				acc[j][v] = _mm512_fmadd_ps(kb, q[v], acc[j][v]);
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < J; j++)
#pragma GCC unroll 4
		for (int v = 0; v < NV; v++)
			_mm512_store_ps(st + j * QB + 16 * v, acc[j][v]);
}

// values adds v[j][d] st[j][i] to ot[d][i] in double, j = 0 .. kn in
// order, for DD dimensions from d0 (rows of v vr floats apart).
ALWAYS_INLINE void values(int NV, const float *st, int64_t kn, const float *v, size_t vr, int64_t d0, double *ot) {
	__m512d acc[DD][8];
#pragma GCC unroll 2
	for (int r = 0; r < DD; r++)
#pragma GCC unroll 8
		for (int u = 0; u < 2 * NV; u++)
			acc[r][u] = _mm512_load_pd(ot + (d0 + r) * QB + 8 * u);
	for (int64_t j = 0; j < kn; j++) {
		__m512d p[8];
#pragma GCC unroll 4
		for (int u = 0; u < NV; u++) {
			const __m512 pf = _mm512_load_ps(st + j * QB + 16 * u);
			p[2 * u] = _mm512_cvtps_pd(_mm512_castps512_ps256(pf));
			p[2 * u + 1] = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(pf), 1)));
		}
#pragma GCC unroll 2
		for (int r = 0; r < DD; r++) {
			const __m512d vb = _mm512_set1_pd((double)v[j * vr + d0 + r]);
#pragma GCC unroll 8
			for (int u = 0; u < 2 * NV; u++)
				acc[r][u] = _mm512_fmadd_pd(vb, p[u], acc[r][u]);
		}
	}
#pragma GCC unroll 2
	for (int r = 0; r < DD; r++)
#pragma GCC unroll 8
		for (int u = 0; u < 2 * NV; u++)
			_mm512_store_pd(ot + (d0 + r) * QB + 8 * u, acc[r][u]);
}

enum tile { SKIP, PLAIN, MIXED };

// classify says whether the mask rows mp (qn rows, mr bytes apart) hide
// every one of kn keys (SKIP), add zero to all of them (PLAIN) or neither.
static enum tile classify(const uint16_t *mp, size_t mr, int64_t qn, int64_t kn) {
	if (mp == NULL) {
		return PLAIN;
	}
	bool all_inf = true, all_zero = true;
	const __m512i inf = _mm512_set1_epi16((short)0xFC00), abs = _mm512_set1_epi16(0x7FFF);
	for (int64_t i = 0; i < qn && (all_inf || all_zero); i++) {
		const uint16_t *row = (const uint16_t *)((const char *)mp + i * mr);
		for (int64_t j = 0; j < kn; j += 32) {
			const __mmask32 lanes = kn - j >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << (kn - j)) - 1);
			const __m512i x = _mm512_maskz_loadu_epi16(lanes, row + j);
			all_inf = all_inf && _mm512_mask_cmpneq_epi16_mask(lanes, x, inf) == 0;
			all_zero = all_zero && _mm512_mask_test_epi16_mask(lanes, x, abs) == 0;
		}
	}
	return all_inf ? SKIP : all_zero ? PLAIN : MIXED;
}

// widen copies n float16 rows of w values (r bytes apart) to float32, w
// floats apart.
static void widen(const char *src, size_t r, int64_t n, int64_t w, float *dst) {
	for (int64_t j = 0; j < n; j++) {
		const uint16_t *s = (const uint16_t *)(src + j * r);
		float *d = dst + j * w;
		int64_t c = 0;
		for (; c + 16 <= w; c += 16)
			_mm512_storeu_ps(d + c, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + c))));
		for (; c < w; c++)
			d[c] = _cvtsh_ss(s[c]);
	}
}

// block runs one task: queries q0 .. q0+qn of head h in sequence s, NV
// vectors of them.
ALWAYS_INLINE void block(int NV, const struct attn *a, struct buf *b, int64_t s, int64_t h, int64_t q0, int64_t qn) {
	const int64_t dk = a->dk, dv = a->dv;
	const char *qp = a->q + h * a->q2 + s * a->q3 + q0 * a->q1;
	for (int64_t i = 0; i < QB; i++)
		for (int64_t d = 0; d < dk; d++)
			b->qt[d * QB + i] = i < qn ? ((const float *)(qp + i * a->q1))[d] * a->scale : 0.0f;
	memset(b->ot, 0, dv * QB * sizeof(double));
	for (int64_t i = 0; i < QB; i++) {
		b->m[i] = -INFINITY;
		b->l[i] = 0.0;
	}
	const char *kp = a->k + (h / a->rk2) * a->k2 + (s / a->rk3) * a->k3;
	const char *vp = a->v + (h / a->rv2) * a->v2 + (s / a->rv3) * a->v3;
	const uint16_t *mp = a->mask == NULL ? NULL
	                                     : (const uint16_t *)(a->mask + (h % a->mh) * a->m2 + (s % a->ms) * a->m3 + q0 * a->m1);
	// First pass: every visible block's scores, kept, and each query's
	// maximum over all of them.
	for (int64_t j0 = 0; j0 < a->n_kv; j0 += KB) {
		const int64_t kn = a->n_kv - j0 < KB ? a->n_kv - j0 : KB;
		const enum tile t = classify(mp == NULL ? NULL : mp + j0, a->m1, qn, kn);
		b->tiles[j0 / KB] = (unsigned char)t;
		if (t == SKIP) {
			continue;
		}
		const float *kf;
		size_t kr;
		if (a->k_f16) {
			widen(kp + j0 * a->k1, a->k1, kn, dk, b->kf);
			kf = b->kf, kr = dk;
		} else {
			kf = (const float *)(kp + j0 * a->k1), kr = a->k1 / sizeof(float);
		}
		float *st = b->st + j0 * QB;
		int64_t j = 0;
		for (; j + JR <= kn; j += JR)
			scores(NV, JR, kf + j * kr, kr, b->qt, dk, st + j * QB);
		for (; j < kn; j++)
			scores(NV, 1, kf + j * kr, kr, b->qt, dk, st + j * QB);
		if (t == MIXED) {
			for (int64_t i = 0; i < qn; i++) {
				const uint16_t *row = (const uint16_t *)((const char *)(mp + j0) + i * a->m1);
				for (int64_t c = 0; c < kn; c++)
					st[c * QB + i] += _cvtsh_ss(row[c]);
			}
		}
#pragma GCC unroll 4
		for (int u = 0; u < NV; u++) {
			__m512 mx = _mm512_load_ps(b->m + 16 * u);
			for (int64_t c = 0; c < kn; c++)
				mx = _mm512_max_ps(mx, _mm512_load_ps(st + c * QB + 16 * u));
			_mm512_store_ps(b->m + 16 * u, mx);
		}
	}
	// A query that has seen no key keeps -inf; subtract 0 instead so its
	// probabilities are 0, not NaN.
	__m512 mu[4];
#pragma GCC unroll 4
	for (int u = 0; u < NV; u++) {
		const __m512 mx = _mm512_load_ps(b->m + 16 * u);
		mu[u] = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(mx, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ), mx, _mm512_setzero_ps());
	}
	// Second pass: probabilities against the maximum, summed and applied
	// to V key after key.
	for (int64_t j0 = 0; j0 < a->n_kv; j0 += KB) {
		if (b->tiles[j0 / KB] == SKIP) {
			continue;
		}
		const int64_t kn = a->n_kv - j0 < KB ? a->n_kv - j0 : KB;
		const float *vf;
		size_t vr;
		if (a->v_f16) {
			widen(vp + j0 * a->v1, a->v1, kn, dv, b->vf);
			vf = b->vf, vr = dv;
		} else {
			vf = (const float *)(vp + j0 * a->v1), vr = a->v1 / sizeof(float);
		}
		float *st = b->st + j0 * QB;
#pragma GCC unroll 4
		for (int u = 0; u < NV; u++) {
			__m512d lo = _mm512_load_pd(b->l + 16 * u), hi = _mm512_load_pd(b->l + 16 * u + 8);
			for (int64_t c = 0; c < kn; c++) {
				const __m512 p = exp16(_mm512_sub_ps(_mm512_load_ps(st + c * QB + 16 * u), mu[u]));
				_mm512_store_ps(st + c * QB + 16 * u, p);
				lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(p)));
				hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(p), 1))));
			}
			_mm512_store_pd(b->l + 16 * u, lo);
			_mm512_store_pd(b->l + 16 * u + 8, hi);
		}
		for (int64_t d = 0; d < dv; d += DD)
			values(NV, st, kn, vf, vr, d, b->ot);
	}
	// The output divided by the sum (0 where no key was seen, as ggml),
	// back to rows: token q0+i, head h.
	for (int64_t i = 0; i < qn; i++) {
		const double l = b->l[i];
		float *out = (float *)((char *)a->dst + ((s * a->n_q + q0 + i) * a->heads + h) * a->d1);
		for (int64_t d = 0; d < dv; d++)
			out[d] = l == 0.0 ? 0.0f : (float)(b->ot[d * QB + i] / l);
	}
}

static int64_t attn_tasks(const struct attn *a) { return a->seqs * a->heads * ((a->n_q + QB - 1) / QB); }

// attn_task runs task t of attn_tasks: the last query blocks, which see
// the most keys under a causal mask, come first, so the short ones even
// out the threads at the end.
static void attn_task(const struct attn *a, struct buf *b, int64_t t) {
	const int64_t nb = (a->n_q + QB - 1) / QB;
	const int64_t qb = nb - 1 - t / (a->seqs * a->heads);
	const int64_t hs = t % (a->seqs * a->heads);
	const int64_t s = hs / a->heads, h = hs % a->heads;
	const int64_t q0 = qb * QB, qn = a->n_q - q0 < QB ? a->n_q - q0 : QB;
	switch ((qn + 15) / 16) {
	case 1: block(1, a, b, s, h, q0, qn); break;
	case 2: block(2, a, b, s, h, q0, qn); break;
	case 3: block(3, a, b, s, h, q0, qn); break;
	default: block(4, a, b, s, h, q0, qn); break;
	}
}
#endif // AVX-512F, BW and F16C

#ifndef UDGAM_ATTN_STANDALONE
#include "ggml-cpu-impl.h"
#include "ggml.h"

#ifdef UDGAM_ATTN
// takes says whether dst is an attention this kernel computes as ggml's
// would (to float32 rounding): float32 queries, float32 or float16 keys
// and values, a float16 mask or none, no ALiBi, soft-capping or sinks.
static bool takes(const struct ggml_tensor *dst) {
	const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3];
	float max_bias, softcap;
	memcpy(&max_bias, (const float *)dst->op_params + 1, sizeof(float));
	memcpy(&softcap, (const float *)dst->op_params + 2, sizeof(float));
	return dst->op == GGML_OP_FLASH_ATTN_EXT && dst->type == GGML_TYPE_F32 && q->type == GGML_TYPE_F32 &&
	       (k->type == GGML_TYPE_F32 || k->type == GGML_TYPE_F16) && (v->type == GGML_TYPE_F32 || v->type == GGML_TYPE_F16) &&
	       (mask == NULL || (mask->type == GGML_TYPE_F16 && mask->nb[0] == 2 && mask->ne[0] >= k->ne[1] && mask->ne[1] >= q->ne[1])) &&
	       dst->src[4] == NULL && max_bias == 0.0f && softcap == 0.0f && v->ne[0] % DR == 0 &&
	       q->nb[0] == sizeof(float) && k->nb[0] == ggml_type_size(k->type) && v->nb[0] == ggml_type_size(v->type) &&
	       (k->type == GGML_TYPE_F16 || k->nb[1] % sizeof(float) == 0) &&
	       (v->type == GGML_TYPE_F16 || v->nb[1] % sizeof(float) == 0) && dst->nb[0] == sizeof(float) &&
	       dst->ne[0] == v->ne[0] && dst->ne[1] == q->ne[2] && dst->ne[2] == q->ne[1] && dst->ne[3] == q->ne[3] &&
	       ggml_is_contiguous(dst) && q->ne[2] % k->ne[2] == 0 && q->ne[2] % v->ne[2] == 0 &&
	       q->ne[3] % k->ne[3] == 0 && q->ne[3] % v->ne[3] == 0 && k->ne[1] == v->ne[1];
}
#endif

// udgam_attn computes dst on every thread of params and returns true, or
// returns false (on every thread) and leaves dst to ggml.
bool udgam_attn(const struct ggml_compute_params *params, struct ggml_tensor *dst) {
#ifdef UDGAM_ATTN
	if (!takes(dst)) {
		return false;
	}
	const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3];
	struct attn a = {
		.q = q->data, .k = k->data, .v = v->data, .mask = mask ? mask->data : NULL, .dst = dst->data,
		.q1 = q->nb[1], .q2 = q->nb[2], .q3 = q->nb[3],
		.k1 = k->nb[1], .k2 = k->nb[2], .k3 = k->nb[3],
		.v1 = v->nb[1], .v2 = v->nb[2], .v3 = v->nb[3],
		.m1 = mask ? mask->nb[1] : 0, .m2 = mask ? mask->nb[2] : 0, .m3 = mask ? mask->nb[3] : 0,
		.d1 = dst->nb[1],
		.n_q = q->ne[1], .n_kv = k->ne[1], .dk = k->ne[0], .dv = v->ne[0],
		.heads = q->ne[2], .seqs = q->ne[3],
		.rk2 = q->ne[2] / k->ne[2], .rk3 = q->ne[3] / k->ne[3],
		.rv2 = q->ne[2] / v->ne[2], .rv3 = q->ne[3] / v->ne[3],
		.mh = mask ? mask->ne[2] : 1, .ms = mask ? mask->ne[3] : 1,
		.k_f16 = k->type == GGML_TYPE_F16, .v_f16 = v->type == GGML_TYPE_F16,
	};
	memcpy(&a.scale, (const float *)dst->op_params + 0, sizeof(float));
	struct buf b;
	GGML_ASSERT(buf_init(&b, a.dk, a.dv, a.n_kv));
	const int ith = params->ith, nth = params->nth;
	const int64_t n = attn_tasks(&a);
	// Tasks are handed out as threads finish (ggml's chunk counter): under
	// a causal mask they differ in size.
	if (ith == 0) {
		ggml_threadpool_chunk_set(params->threadpool, nth);
	}
	ggml_barrier(params->threadpool);
	for (int64_t t = ith; t < n; t = ggml_threadpool_chunk_add(params->threadpool, 1)) {
		attn_task(&a, &b, t);
	}
	free(b.mem);
	return true;
#else
	(void)params, (void)dst;
	return false;
#endif
}
#endif // !UDGAM_ATTN_STANDALONE
