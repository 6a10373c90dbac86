// udgam-ci's attention for ggml-cpu's GGML_OP_FLASH_ATTN_EXT on x86 with
// AVX-512, or AVX2, FMA and F16C, installed by scripts/engine.sh (its
// header says why).
//
// ggml's own CPU flash attention takes one query row and one key at a time
// (a dot product, then one row of V scaled into the output) and, with a
// float16 V, keeps its running output in float16. Here a task is one head
// and a block of up to QB queries: the queries are packed transposed (one
// vector holds 16 queries on AVX-512, 8 on AVX2). A first pass computes
// the scores K.Q^T of every block of KB keys whose mask is not all -inf
// for those queries, keeps them, and takes each query's maximum over all
// its keys; a second takes the probabilities against that maximum and
// adds them and P.V into a sum and output (held transposed) in double, key
// after key. The output is divided by the sum at the end and rounded to
// float32 once. Scores and probabilities are float32 (float16 keys and
// values are widened exactly), every product p*v is exact in double; the
// mask decides per tile which blocks are skipped, so causal,
// packed-sequence and sliding-window masks all keep ggml's meaning. The
// two widths run the same operations in the same order on every score,
// probability and output (each an FMA chain over d or a sum over the keys,
// lane by lane): only the micro-tiles differ, sized to the registers, so
// both give the same bits.
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

// AVX-512BW for the mask's 16-bit lanes; F16C for float16 keys, values and
// mask entries. An AVX2 build (x86-64-v3, or native on Zen 3 and Haswell)
// needs FMA and F16C too.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__F16C__)
#define UDGAM_ATTN 16
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define UDGAM_ATTN 8
#endif

#ifdef UDGAM_ATTN
#include <immintrin.h>

enum {
	VL = UDGAM_ATTN, // float32 lanes: queries per vector
	VD = VL / 2,     // float64 lanes
	QB = 64,         // queries per task
	KB = 64,         // keys per block
	DR = 4,          // output dimensions per P.V micro-tile (v's width must be a multiple)
};

#define ALWAYS_INLINE static inline __attribute__((always_inline))

// The vector operations both widths share, and the micro-tiles: SJ keys x
// SV float32 vectors of queries for scores, DR dimensions x PV float64
// vectors of queries for P.V, one accumulator each, with the loaded
// vectors and a broadcast beside them in the registers (32 on AVX-512, 16
// on AVX2).
#if UDGAM_ATTN == 16
typedef __m512 vec;
typedef __m512d vecd;
#define SJ 4
#define SV 4
#define PV 4
ALWAYS_INLINE vec vload(const float *p) { return _mm512_load_ps(p); }
ALWAYS_INLINE vec vloadu(const float *p) { return _mm512_loadu_ps(p); }
ALWAYS_INLINE void vstore(float *p, vec x) { _mm512_store_ps(p, x); }
ALWAYS_INLINE void vstoreu(float *p, vec x) { _mm512_storeu_ps(p, x); }
ALWAYS_INLINE vec vset1(float x) { return _mm512_set1_ps(x); }
ALWAYS_INLINE vec vzero(void) { return _mm512_setzero_ps(); }
ALWAYS_INLINE vec vsub(vec a, vec b) { return _mm512_sub_ps(a, b); }
ALWAYS_INLINE vec vmul(vec a, vec b) { return _mm512_mul_ps(a, b); }
ALWAYS_INLINE vec vmax(vec a, vec b) { return _mm512_max_ps(a, b); }
ALWAYS_INLINE vec vfmadd(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
ALWAYS_INLINE vec vfnmadd(vec a, vec b, vec c) { return _mm512_fnmadd_ps(a, b, c); }
ALWAYS_INLINE vec vround(vec x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// vzero_neginf is x with its -inf lanes replaced by 0.
ALWAYS_INLINE vec vzero_neginf(vec x) {
	return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ), x, _mm512_setzero_ps());
}
// vscale is p 2^n for integral n, rounded once (to 0 below float32's range).
ALWAYS_INLINE vec vscale(vec p, vec n) { return _mm512_scalef_ps(p, n); }
// vwiden is VL float16 values as float32.
ALWAYS_INLINE vec vwiden(const uint16_t *s) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)s)); }
// vlo and vhi are x's low and high halves in double, exactly.
ALWAYS_INLINE vecd vlo(vec x) { return _mm512_cvtps_pd(_mm512_castps512_ps256(x)); }
ALWAYS_INLINE vecd vhi(vec x) { return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1))); }
ALWAYS_INLINE vecd vdload(const double *p) { return _mm512_load_pd(p); }
ALWAYS_INLINE void vdstore(double *p, vecd x) { _mm512_store_pd(p, x); }
ALWAYS_INLINE void vdstoreu(double *p, vecd x) { _mm512_storeu_pd(p, x); }
ALWAYS_INLINE vecd vdset1(double x) { return _mm512_set1_pd(x); }
ALWAYS_INLINE vecd vdadd(vecd a, vecd b) { return _mm512_add_pd(a, b); }
ALWAYS_INLINE vecd vdfmadd(vecd a, vecd b, vecd c) { return _mm512_fmadd_pd(a, b, c); }
// mask_span folds 32 float16 mask entries from row into all_inf (every one
// -inf) and all_zero (every one +-0); n is at most 32, the entries past it
// are not read.
ALWAYS_INLINE void mask_span(const uint16_t *row, int64_t n, bool *all_inf, bool *all_zero) {
	const __mmask32 lanes = n >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << n) - 1);
	const __m512i x = _mm512_maskz_loadu_epi16(lanes, row);
	*all_inf = *all_inf && _mm512_mask_cmpneq_epi16_mask(lanes, x, _mm512_set1_epi16((short)0xFC00)) == 0;
	*all_zero = *all_zero && _mm512_mask_test_epi16_mask(lanes, x, _mm512_set1_epi16(0x7FFF)) == 0;
}
#else
typedef __m256 vec;
typedef __m256d vecd;
// Scores: 12 accumulators, 2 loaded vectors and a broadcast; P.V: 12
// accumulators, 3 loaded vectors and a broadcast, all 16 registers.
#define SJ 6
#define SV 2
#define PV 3
ALWAYS_INLINE vec vload(const float *p) { return _mm256_load_ps(p); }
ALWAYS_INLINE vec vloadu(const float *p) { return _mm256_loadu_ps(p); }
ALWAYS_INLINE void vstore(float *p, vec x) { _mm256_store_ps(p, x); }
ALWAYS_INLINE void vstoreu(float *p, vec x) { _mm256_storeu_ps(p, x); }
ALWAYS_INLINE vec vset1(float x) { return _mm256_set1_ps(x); }
ALWAYS_INLINE vec vzero(void) { return _mm256_setzero_ps(); }
ALWAYS_INLINE vec vsub(vec a, vec b) { return _mm256_sub_ps(a, b); }
ALWAYS_INLINE vec vmul(vec a, vec b) { return _mm256_mul_ps(a, b); }
ALWAYS_INLINE vec vmax(vec a, vec b) { return _mm256_max_ps(a, b); }
ALWAYS_INLINE vec vfmadd(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
ALWAYS_INLINE vec vfnmadd(vec a, vec b, vec c) { return _mm256_fnmadd_ps(a, b, c); }
ALWAYS_INLINE vec vround(vec x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
ALWAYS_INLINE vec vzero_neginf(vec x) {
	return _mm256_blendv_ps(x, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ));
}
// AVX2 has no scalef: n (here -174 <= n <= 0) in two halves, each a normal
// power of two, so p 2^a is exact and the second product rounds once, as
// scalef does, denormals included.
ALWAYS_INLINE vec vscale(vec p, vec n) {
	const __m256i ni = _mm256_cvtps_epi32(n);
	// p is within [0.7, 1.5): for n >= -125 p 2^n is normal and exact, n
	// added to p's exponent (the usual case: below, a key's probability
	// is under e^-86).
	if (_mm256_testz_ps(_mm256_cmp_ps(n, _mm256_set1_ps(-125.0f), _CMP_LT_OQ), _mm256_castsi256_ps(_mm256_set1_epi32(-1)))) {
		return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(ni, 23)));
	}
	const __m256i a = _mm256_srai_epi32(ni, 1), b = _mm256_sub_epi32(ni, a);
	const __m256i bias = _mm256_set1_epi32(127);
	const vec pa = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(a, bias), 23));
	const vec pb = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(b, bias), 23));
	return _mm256_mul_ps(_mm256_mul_ps(p, pa), pb);
}
ALWAYS_INLINE vec vwiden(const uint16_t *s) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)s)); }
ALWAYS_INLINE vecd vlo(vec x) { return _mm256_cvtps_pd(_mm256_castps256_ps128(x)); }
ALWAYS_INLINE vecd vhi(vec x) { return _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)); }
ALWAYS_INLINE vecd vdload(const double *p) { return _mm256_load_pd(p); }
ALWAYS_INLINE void vdstore(double *p, vecd x) { _mm256_store_pd(p, x); }
ALWAYS_INLINE void vdstoreu(double *p, vecd x) { _mm256_storeu_pd(p, x); }
ALWAYS_INLINE vecd vdset1(double x) { return _mm256_set1_pd(x); }
ALWAYS_INLINE vecd vdadd(vecd a, vecd b) { return _mm256_add_pd(a, b); }
ALWAYS_INLINE vecd vdfmadd(vecd a, vecd b, vecd c) { return _mm256_fmadd_pd(a, b, c); }
ALWAYS_INLINE void mask_span(const uint16_t *row, int64_t n, bool *all_inf, bool *all_zero) {
	int64_t c = 0;
	for (; c + 16 <= n; c += 16) {
		const __m256i x = _mm256_loadu_si256((const __m256i *)(row + c));
		*all_inf = *all_inf && _mm256_movemask_epi8(_mm256_cmpeq_epi16(x, _mm256_set1_epi16((short)0xFC00))) == -1;
		*all_zero = *all_zero && _mm256_testz_si256(x, _mm256_set1_epi16(0x7FFF));
	}
	for (; c < n; c++) {
		*all_inf = *all_inf && row[c] == 0xFC00;
		*all_zero = *all_zero && (row[c] & 0x7FFF) == 0;
	}
}
#endif

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
	float *st;   // n_kv x QB (whole blocks): scores, transposed
	double *pt;  // KB x QB: a key block's probabilities, transposed, in double
	double *vd;  // KB x dv: a key block's values in double
	double *ot;  // dv x QB: the output, transposed, in double
	float *kf;   // KB x dk: a float16 key block widened
	float *m;    // QB: maximum per query
	double *l;   // QB: sum per query, in double
	unsigned char *tiles; // n_kv / KB: each key block's enum tile
	const uint16_t *tiles_of; // the mask rows tiles was classified for (query heads share them)
	int64_t tiles_qn;         // and how many
	void *mem;
};

static bool buf_init(struct buf *b, int64_t dk, int64_t dv, int64_t n_kv) {
	const int64_t nt = (n_kv + KB - 1) / KB;
	// In floats; each double part counts twice and starts 64-byte aligned
	// since every part before it is a multiple of 16 floats.
	size_t n = (size_t)dk * QB + (size_t)nt * KB * QB + 2 * (size_t)KB * QB + 2 * (size_t)KB * dv + 2 * (size_t)dv * QB +
	           (size_t)KB * dk + 3 * QB + ((size_t)nt + 3) / 4;
	b->mem = aligned_alloc(64, (n * sizeof(float) + 63) & ~(size_t)63);
	if (b->mem == NULL) {
		return false;
	}
	float *p = b->mem;
	b->qt = p, p += dk * QB;
	b->st = p, p += nt * KB * QB;
	b->pt = (double *)p, p += 2 * KB * QB;
	b->vd = (double *)p, p += 2 * KB * dv;
	b->ot = (double *)p, p += 2 * dv * QB;
	b->kf = p, p += KB * dk;
	b->m = p, p += QB;
	b->l = (double *)p, p += 2 * QB;
	b->tiles = (unsigned char *)p;
	b->tiles_of = NULL;
	return true;
}

// vexp is e^x in float32 for x <= 0 (the only arguments here), within
// about 1 ulp: x = n ln2 + r with |r| <= ln2/2, e^r by its Taylor series
// to r^7 (truncation below 1e-8 relative), then scaled by 2^n, which
// flushes to 0 below float32's range (x < -104, -inf included).
ALWAYS_INLINE vec vexp(vec x) {
	x = vmax(x, vset1(-120.0f));
	const vec n = vround(vmul(x, vset1(1.44269504088896341f)));
	// ln2 in two parts; the first has 16 significant bits, so n times it
	// is exact for |n| < 256.
	vec r = vfnmadd(n, vset1(0.693145751953125f), x);
	r = vfnmadd(n, vset1(1.42860682030941723e-6f), r);
	vec p = vset1(1.0f / 5040);
	p = vfmadd(p, r, vset1(1.0f / 720));
	p = vfmadd(p, r, vset1(1.0f / 120));
	p = vfmadd(p, r, vset1(1.0f / 24));
	p = vfmadd(p, r, vset1(1.0f / 6));
	p = vfmadd(p, r, vset1(0.5f));
	p = vfmadd(p, r, vset1(1.0f));
	p = vfmadd(p, r, vset1(1.0f));
	return vscale(p, n);
}

// keep and keepd make GCC hold a loaded vector in a register: it would
// fold the load into each FMA that uses it, one load per FMA where one
// per row of the micro-tile is needed, and on Zen 4 (one 512-bit load a
// cycle) the loads, not the FMAs, then set the pace.
ALWAYS_INLINE void keep(vec *x) { __asm__("" : "+v"(*x)); }
ALWAYS_INLINE void keepd(vecd *x) { __asm__("" : "+v"(*x)); }

// scores writes st[j][i] = sum_d k[j][d] qt[d][i] for rows j of k (kr
// floats apart), NV vectors of queries, J keys: one FMA chain over d per
// score, from 0, in order.
ALWAYS_INLINE void scores(int NV, int J, const float *k, size_t kr, const float *qt, int64_t dk, float *st) {
	vec acc[SJ][SV];
#pragma GCC unroll 8
	for (int j = 0; j < J; j++)
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++)
			acc[j][v] = vzero();
	for (int64_t d = 0; d < dk; d++) {
		vec q[SV];
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++)
			q[v] = vload(qt + d * QB + VL * v);
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++)
			keep(&q[v]);
#pragma GCC unroll 8
		for (int j = 0; j < J; j++) {
			const vec kb = vset1(k[j * kr + d]);
#pragma GCC unroll 8
			for (int v = 0; v < NV; v++)
				acc[j][v] = vfmadd(kb, q[v], acc[j][v]);
		}
	}
#pragma GCC unroll 8
	for (int j = 0; j < J; j++)
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++)
			vstore(st + j * QB + VL * v, acc[j][v]);
}

// score_rows runs scores over kn keys for NV vectors of queries: SJ keys
// a micro-tile, then the rest in one.
ALWAYS_INLINE void score_rows(int NV, const float *k, size_t kr, int64_t kn, const float *qt, int64_t dk, float *st) {
	int64_t j = 0;
	for (; j + SJ <= kn; j += SJ)
		scores(NV, SJ, k + j * kr, kr, qt, dk, st + j * QB);
	switch (kn - j) {
#if SJ > 5
	case 5: scores(NV, 5, k + j * kr, kr, qt, dk, st + j * QB); break;
	case 4: scores(NV, 4, k + j * kr, kr, qt, dk, st + j * QB); break;
#endif
	case 3: scores(NV, 3, k + j * kr, kr, qt, dk, st + j * QB); break;
	case 2: scores(NV, 2, k + j * kr, kr, qt, dk, st + j * QB); break;
	case 1: scores(NV, 1, k + j * kr, kr, qt, dk, st + j * QB); break;
	default: break;
	}
}

// values adds vd[j][d] pt[j][i] to ot[d][i] in double, j = 0 .. kn in
// order, for DR dimensions from d0 and NU float64 vectors of queries: each
// product is exact, so each output is one rounding per key, the same in
// any grouping of queries or dimensions.
ALWAYS_INLINE void values(int NU, const double *pt, int64_t kn, const double *vd, int64_t dv, int64_t d0, double *ot) {
	vecd acc[DR][PV];
#pragma GCC unroll 8
	for (int r = 0; r < DR; r++)
#pragma GCC unroll 8
		for (int u = 0; u < NU; u++)
			acc[r][u] = vdload(ot + (d0 + r) * QB + VD * u);
	for (int64_t j = 0; j < kn; j++) {
		vecd p[PV];
#pragma GCC unroll 8
		for (int u = 0; u < NU; u++)
			p[u] = vdload(pt + j * QB + VD * u);
#pragma GCC unroll 8
		for (int u = 0; u < NU; u++)
			keepd(&p[u]);
#pragma GCC unroll 8
		for (int r = 0; r < DR; r++) {
			const vecd vb = vdset1(vd[j * dv + d0 + r]);
#pragma GCC unroll 8
			for (int u = 0; u < NU; u++)
				acc[r][u] = vdfmadd(vb, p[u], acc[r][u]);
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < DR; r++)
#pragma GCC unroll 8
		for (int u = 0; u < NU; u++)
			vdstore(ot + (d0 + r) * QB + VD * u, acc[r][u]);
}

// value_dims runs values over all dv dimensions for NU float64 vectors of
// queries.
ALWAYS_INLINE void value_dims(int NU, const double *pt, int64_t kn, const double *vd, int64_t dv, double *ot) {
	for (int64_t d = 0; d < dv; d += DR)
		values(NU, pt, kn, vd, dv, d, ot);
}

// pv_width is how many float64 vectors of queries the next P.V tile takes
// when left remain: PV, but one more than PV is split into two tiles
// (3+2 rather than 4+1), since a tile of one vector has too few
// accumulators to hide the FMA latency.
static inline int64_t pv_width(int64_t left) {
	return left == PV + 1 ? (PV + 1) / 2 : left < PV ? left : PV;
}

enum tile { SKIP, PLAIN, MIXED };

// classify says whether the mask rows mp (qn rows, mr bytes apart) hide
// every one of kn keys (SKIP), add zero to all of them (PLAIN) or neither.
static enum tile classify(const uint16_t *mp, size_t mr, int64_t qn, int64_t kn) {
	if (mp == NULL) {
		return PLAIN;
	}
	bool all_inf = true, all_zero = true;
	for (int64_t i = 0; i < qn && (all_inf || all_zero); i++) {
		const uint16_t *row = (const uint16_t *)((const char *)mp + i * mr);
		for (int64_t j = 0; j < kn; j += 32)
			mask_span(row + j, kn - j < 32 ? kn - j : 32, &all_inf, &all_zero);
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
		for (; c + VL <= w; c += VL)
			vstoreu(d + c, vwiden(s + c));
		for (; c < w; c++)
			d[c] = _cvtsh_ss(s[c]);
	}
}

// widen_values copies n rows of w values (r bytes apart, float16 or
// float32) to double, w apart: exact either way.
static void widen_values(const char *src, size_t r, int64_t n, int64_t w, bool f16, double *dst) {
	for (int64_t j = 0; j < n; j++) {
		const char *s = src + j * r;
		double *d = dst + j * w;
		int64_t c = 0;
		for (; c + VL <= w; c += VL) {
			const vec x = f16 ? vwiden((const uint16_t *)s + c) : vloadu((const float *)s + c);
			vdstoreu(d + c, vlo(x));
			vdstoreu(d + c + VD, vhi(x));
		}
		for (; c < w; c++)
			d[c] = f16 ? (double)_cvtsh_ss(((const uint16_t *)s)[c]) : (double)((const float *)s)[c];
	}
}

// block runs one task: queries q0 .. q0+qn of head h in sequence s.
static void block(const struct attn *a, struct buf *b, int64_t s, int64_t h, int64_t q0, int64_t qn) {
	const int64_t dk = a->dk, dv = a->dv, nv = (qn + VL - 1) / VL, nu = (qn + VD - 1) / VD;
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
	// The mask's rows for these queries, block by block: the same for every
	// head the mask is broadcast over, and a thread's next task is usually
	// the next head.
	if (mp == NULL || mp != b->tiles_of || qn != b->tiles_qn) {
		for (int64_t j0 = 0; j0 < a->n_kv; j0 += KB)
			b->tiles[j0 / KB] = (unsigned char)classify(mp == NULL ? NULL : mp + j0, a->m1, qn, a->n_kv - j0 < KB ? a->n_kv - j0 : KB);
		b->tiles_of = mp, b->tiles_qn = qn;
	}
	// First pass: every visible block's scores, kept, and each query's
	// maximum over all of them.
	for (int64_t j0 = 0; j0 < a->n_kv; j0 += KB) {
		const int64_t kn = a->n_kv - j0 < KB ? a->n_kv - j0 : KB;
		const enum tile t = b->tiles[j0 / KB];
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
		for (int64_t u = 0; u < nv; u += SV) {
			switch (nv - u < SV ? nv - u : SV) {
			case 1: score_rows(1, kf, kr, kn, b->qt + VL * u, dk, st + VL * u); break;
#if SV > 2
			case 2: score_rows(2, kf, kr, kn, b->qt + VL * u, dk, st + VL * u); break;
			case 3: score_rows(3, kf, kr, kn, b->qt + VL * u, dk, st + VL * u); break;
#endif
			default: score_rows(SV, kf, kr, kn, b->qt + VL * u, dk, st + VL * u); break;
			}
		}
		if (t == MIXED) {
			for (int64_t i = 0; i < qn; i++) {
				const uint16_t *row = (const uint16_t *)((const char *)(mp + j0) + i * a->m1);
				for (int64_t c = 0; c < kn; c++)
					st[c * QB + i] += _cvtsh_ss(row[c]);
			}
		}
		for (int64_t u = 0; u < nv; u++) {
			vec mx = vload(b->m + VL * u);
			for (int64_t c = 0; c < kn; c++)
				mx = vmax(mx, vload(st + c * QB + VL * u));
			vstore(b->m + VL * u, mx);
		}
	}
	// A query that has seen no key keeps -inf; subtract 0 instead so its
	// probabilities are 0, not NaN.
	vec mu[QB / VL];
	for (int64_t u = 0; u < nv; u++)
		mu[u] = vzero_neginf(vload(b->m + VL * u));
	// Second pass: probabilities against the maximum, summed and applied
	// to V key after key, in double.
	for (int64_t j0 = 0; j0 < a->n_kv; j0 += KB) {
		if (b->tiles[j0 / KB] == SKIP) {
			continue;
		}
		const int64_t kn = a->n_kv - j0 < KB ? a->n_kv - j0 : KB;
		widen_values(vp + j0 * a->v1, a->v1, kn, dv, a->v_f16, b->vd);
		const float *st = b->st + j0 * QB;
		for (int64_t u = 0; u < nv; u++) {
			vecd lo = vdload(b->l + VL * u), hi = vdload(b->l + VL * u + VD);
			for (int64_t c = 0; c < kn; c++) {
				const vec p = vexp(vsub(vload(st + c * QB + VL * u), mu[u]));
				const vecd pl = vlo(p), ph = vhi(p);
				vdstore(b->pt + c * QB + VL * u, pl);
				vdstore(b->pt + c * QB + VL * u + VD, ph);
				lo = vdadd(lo, pl);
				hi = vdadd(hi, ph);
			}
			vdstore(b->l + VL * u, lo);
			vdstore(b->l + VL * u + VD, hi);
		}
		for (int64_t u = 0, w; u < nu; u += w) {
			w = pv_width(nu - u);
			switch (w) {
			case 1: value_dims(1, b->pt + VD * u, kn, b->vd, dv, b->ot + VD * u); break;
			case 2: value_dims(2, b->pt + VD * u, kn, b->vd, dv, b->ot + VD * u); break;
#if PV > 3
			case 3: value_dims(3, b->pt + VD * u, kn, b->vd, dv, b->ot + VD * u); break;
#endif
			default: value_dims(PV, b->pt + VD * u, kn, b->vd, dv, b->ot + VD * u); break;
			}
		}
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
	block(a, b, s, h, q0, qn);
}
#endif // UDGAM_ATTN

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
