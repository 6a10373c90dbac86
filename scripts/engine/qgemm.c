// udgam-ci's matrix product for quantized weights on x86 with AVX2, FMA and
// F16C, installed by scripts/engine.sh beside udgam-gemm.c (patch 0011
// hooks it into ggml's MUL_MAT ahead of udgam_gemm).
//
// ggml multiplies quantized weights by quantizing each activation row to
// 8 bits (Q8_0 or Q8_K) and taking integer dot products row by row (or
// tinyBLAS's for Q8_0 and Q4_0). Here every product of a quantized weight
// type this file names, whatever its number of rows, goes through gemm.c's
// packed outer-product kernel instead: each thread dequantizes its MR-row
// panels of the weights, one block of k at a time, to float32 (ggml's
// to_float's values bit for bit, which transformers dequantizes too),
// packs them as gemm.c packs float32 weights, and multiplies them by the
// float32 activations, packed once for all threads. The dequantization is
// paid once per weight and QCHUNK rows of activations: amortised over a
// batch of prompt tokens it costs little, while for a single row it costs
// more than ggml's dot products; scoring decodes batches.
//
// Exactness: each output is the same sequence of float32 operations for
// any batch, packing, position in a tile or number of threads (an FMA
// chain over each block of k in order, the blocks added in order, and the
// blocks' bounds depend on k and the weight type alone), so a record's
// scores are the same bits however it is batched; and the activations keep
// their 24 bits where ggml's path rounds them to 8, so the products are
// closer to a float64 reference's (runner/llama TestQuantizedMatMul).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#define UDGAM_GEMM_STANDALONE
#define UDGAM_GEMM_SHARES
#include "udgam-gemm.c"
#undef UDGAM_GEMM_STANDALONE
#pragma GCC diagnostic pop

#include "ggml-cpu-impl.h"
#include "ggml.h"

#ifdef UDGAM_GEMM
enum {
	// Most rows of src1 packed at once: their panels (QCHUNK x k floats,
	// 8 MB at k = 2048) bound the work buffer, and each weight is
	// dequantized once per QCHUNK rows.
	QCHUNK = 1024,
};

// qtype says whether weights of type t come here.
static bool qtype(enum ggml_type t) {
	switch (t) {
	case GGML_TYPE_Q4_0:
	case GGML_TYPE_Q4_1:
	case GGML_TYPE_Q5_0:
	case GGML_TYPE_Q5_1:
	case GGML_TYPE_Q8_0:
	case GGML_TYPE_Q2_K:
	case GGML_TYPE_Q3_K:
	case GGML_TYPE_Q4_K:
	case GGML_TYPE_Q5_K:
	case GGML_TYPE_Q6_K:
		return true;
	default:
		return false;
	}
}

// qk_block is the most k per block for weights of blck values per
// quantization block: whole quantization blocks, as many as fit in KC (at
// least one: the k-quants' 256 exceed AVX2's 320 twice), spread evenly.
static int64_t qk_block(int64_t k, int64_t blck) {
	const int64_t nb = k / blck, per = KC / blck > 0 ? KC / blck : 1;
	const int64_t n = (nb + per - 1) / per;
	return (nb + n - 1) / n * blck;
}

// Dequantizing is most of this file's overhead where the activations
// come in few rows (Gemma 3's 262,144-token vocabulary makes the runner
// decode its steps 64 rows at a time), so the types named here are
// widened 8 lanes at a time (Q5_1 goes through ggml's to_float). Each value
// of Q4_0, Q4_1, Q5_0 and Q8_0 is q*d (plus m for Q4_1), with q an
// integer of at most 8 bits and d a float16: the product is exact in
// float32, so these are to_float's values bit for bit.
static inline __m256 widen8(__m128i q) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)); }

static void dequant_q8_0(const char *x, float *y, int64_t k) {
	for (int64_t b = 0; b < k / 32; b++, x += 34, y += 32) {
		const __m256 d = _mm256_set1_ps(_cvtsh_ss(*(const uint16_t *)x));
		const __m128i q0 = _mm_loadu_si128((const __m128i *)(x + 2)), q1 = _mm_loadu_si128((const __m128i *)(x + 18));
		_mm256_storeu_ps(y, _mm256_mul_ps(widen8(q0), d));
		_mm256_storeu_ps(y + 8, _mm256_mul_ps(widen8(_mm_srli_si128(q0, 8)), d));
		_mm256_storeu_ps(y + 16, _mm256_mul_ps(widen8(q1), d));
		_mm256_storeu_ps(y + 24, _mm256_mul_ps(widen8(_mm_srli_si128(q1, 8)), d));
	}
}

// nibbles4 stores the 32 values of 16 bytes of 4-bit quants (low nibbles
// first, then high) plus hi (Q5_0's fifth bits, as 0 or 16 per value),
// less off, times d, plus m where add (Q4_1; a sum with 0 would turn -0
// into +0).
static inline void nibbles4(const char *qs, __m256i hi0, __m256i hi1, __m256i hi2, __m256i hi3, int off, __m256 d, __m256 m,
			    bool add, float *y) {
	const __m128i q = _mm_loadu_si128((const __m128i *)qs), mask = _mm_set1_epi8(0x0f);
	const __m128i lo = _mm_and_si128(q, mask), hi = _mm_and_si128(_mm_srli_epi16(q, 4), mask);
	const __m256i o = _mm256_set1_epi32(off);
	const __m256i v[4] = {_mm256_cvtepu8_epi32(lo), _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)), _mm256_cvtepu8_epi32(hi),
			      _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8))};
	const __m256i h[4] = {hi0, hi1, hi2, hi3};
	for (int i = 0; i < 4; i++) {
		const __m256 x = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_or_si256(v[i], h[i]), o));
		_mm256_storeu_ps(y + 8 * i, add ? _mm256_fmadd_ps(x, d, m) : _mm256_mul_ps(x, d));
	}
}

static void dequant_q4_0(const char *x, float *y, int64_t k) {
	const __m256i z = _mm256_setzero_si256();
	for (int64_t b = 0; b < k / 32; b++, x += 18, y += 32)
		nibbles4(x + 2, z, z, z, z, 8, _mm256_set1_ps(_cvtsh_ss(*(const uint16_t *)x)), _mm256_setzero_ps(), false, y);
}

static void dequant_q4_1(const char *x, float *y, int64_t k) {
	const __m256i z = _mm256_setzero_si256();
	for (int64_t b = 0; b < k / 32; b++, x += 20, y += 32)
		nibbles4(x + 4, z, z, z, z, 0, _mm256_set1_ps(_cvtsh_ss(*(const uint16_t *)x)),
			 _mm256_set1_ps(_cvtsh_ss(*(const uint16_t *)(x + 2))), true, y);
}

static void dequant_q5_0(const char *x, float *y, int64_t k) {
	const __m256i shift = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), bit = _mm256_set1_epi32(1);
	for (int64_t b = 0; b < k / 32; b++, x += 22, y += 32) {
		uint32_t qh;
		memcpy(&qh, x + 2, 4);
		// Value v's fifth bit is bit v of qh (v < 16 the low nibble of
		// byte v, else the high nibble of byte v - 16).
		__m256i h[4];
		for (int i = 0; i < 4; i++)
			h[i] = _mm256_slli_epi32(
				_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)(qh >> (8 * i))), shift), bit), 4);
		nibbles4(x + 6, h[0], h[1], h[2], h[3], 16, _mm256_set1_ps(_cvtsh_ss(*(const uint16_t *)x)), _mm256_setzero_ps(), false,
			 y);
	}
}

// The k-quants' super-blocks hold 256 values, each an integer q of at
// most 6 bits times a float16 and an integer scale of at most 8 bits
// (less a float16 times a 6-bit minimum, for Q2_K, Q4_K and Q5_K): every
// product is exact in float32 and the one subtraction rounds once, as an
// FMA's does, so these too are to_float's values bit for bit. u8x8 widens
// 8 bytes to 32-bit lanes; put8 stores d*q - m (or d*q).
enum { QK = 256 };

static inline __m256i u8x8(const uint8_t *p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)); }

static inline void put8(float *y, __m256i q, float d, float m, bool sub) {
	const __m256 x = _mm256_cvtepi32_ps(q);
	_mm256_storeu_ps(y, sub ? _mm256_fmsub_ps(x, _mm256_set1_ps(d), _mm256_set1_ps(m)) : _mm256_mul_ps(x, _mm256_set1_ps(d)));
}

static inline __m256i bits(__m256i v, int shift, int mask) {
	return _mm256_and_si256(_mm256_srli_epi32(v, shift), _mm256_set1_epi32(mask));
}

static inline float f16(const uint8_t *p) { return _cvtsh_ss(*(const uint16_t *)p); }

// Q4_K and Q5_K: float16 d and dmin, 12 bytes of 6-bit scales and mins
// for 8 groups of 32 values, (Q5_K: the fifth bits, 32 bytes), then 4-bit
// quants, 32 bytes per pair of groups: the low nibbles the first group,
// the high ones the second.
static void dequant_q45_k(const uint8_t *x, float *y, int64_t k, bool five) {
	const size_t size = five ? 176 : 144;
	for (int64_t b = 0; b < k / QK; b++, x += size, y += QK) {
		const float d = f16(x), dmin = f16(x + 2);
		const uint8_t *s = x + 4, *qh = x + 16, *q = x + (five ? 48 : 16);
		float sc[8], mn[8];
		for (int j = 0; j < 8; j++) {
			const int lo = j < 4 ? s[j] & 63 : (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
			const int hi = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | (s[j] >> 6) << 4;
			sc[j] = d * lo, mn[j] = dmin * hi;
		}
		for (int j = 0; j < 4; j++, q += 32)
			for (int g = 0; g < 32; g += 8) {
				__m256i v = u8x8(q + g), lo = bits(v, 0, 15), hi = bits(v, 4, 15);
				if (five) {
					const __m256i h = u8x8(qh + g);
					lo = _mm256_or_si256(lo, _mm256_slli_epi32(bits(h, 2 * j, 1), 4));
					hi = _mm256_or_si256(hi, _mm256_slli_epi32(bits(h, 2 * j + 1, 1), 4));
				}
				put8(y + 64 * j + g, lo, sc[2 * j], mn[2 * j], true);
				put8(y + 64 * j + 32 + g, hi, sc[2 * j + 1], mn[2 * j + 1], true);
			}
	}
}

// Q6_K: 128 bytes of low nibbles, 64 of the top two bits, 16 int8 scales
// (one per 16 values), float16 d. Each half of 128 values takes 64 bytes
// of nibbles and 32 of top bits: byte l's low nibble and bits 0-1 make
// value l, byte l+32's and bits 2-3 value l+32, the high nibbles and bits
// 4-5 and 6-7 values l+64 and l+96; q is those 6 bits less 32.
static void dequant_q6_k(const char *p, float *y, int64_t k) {
	const __m256i off = _mm256_set1_epi32(32);
	const uint8_t *x = (const uint8_t *)p;
	for (int64_t b = 0; b < k / QK; b++, x += 210, y += QK) {
		const float d = f16(x + 208);
		for (int half = 0; half < 2; half++) {
			const uint8_t *ql = x + 64 * half, *qh = x + 128 + 32 * half;
			const int8_t *sc = (const int8_t *)(x + 192) + 8 * half;
			float *out = y + 128 * half;
			for (int g = 0; g < 32; g += 8) {
				const __m256i a = u8x8(ql + g), c = u8x8(ql + 32 + g), h = u8x8(qh + g);
				const __m256i v[4] = {bits(a, 0, 15), bits(c, 0, 15), bits(a, 4, 15), bits(c, 4, 15)};
				for (int i = 0; i < 4; i++)
					put8(out + 32 * i + g, _mm256_sub_epi32(_mm256_or_si256(v[i], _mm256_slli_epi32(bits(h, 2 * i, 3), 4)), off),
					     d * sc[g / 16 + 2 * i], 0, false);
			}
		}
	}
}

// Q2_K and Q3_K: 16 groups of 16 values, 2-bit quants in 64 bytes, 32 per
// half of 128 values, byte l's bits 2j..2j+1 value 32j+l (l < 32).
// Q2_K: 16 bytes of 4-bit scales (low nibble) and mins (high), then the
// quants, float16 d and dmin. Q3_K: 32 bytes of third bits (value 32j+l
// of half h: bit 4h+j of byte l; clear means q - 4), the quants, 12 bytes
// of 6-bit scales less 32, float16 d.
static void dequant_q23_k(const uint8_t *x, float *y, int64_t k, bool three) {
	const size_t size = three ? 110 : 84;
	for (int64_t b = 0; b < k / QK; b++, x += size, y += QK) {
		const uint8_t *q = x + (three ? 32 : 16), *s = x + (three ? 96 : 0);
		float sc[16], mn[16];
		for (int i = 0; i < 16; i++) {
			if (three) {
				const int lo = i < 8 ? s[i] & 15 : s[i - 8] >> 4, hi = s[8 + i % 4] >> (2 * (i / 4)) & 3;
				sc[i] = f16(x + 108) * ((lo | hi << 4) - 32), mn[i] = 0;
			} else
				sc[i] = f16(x + 80) * (s[i] & 15), mn[i] = f16(x + 82) * (s[i] >> 4);
		}
		for (int half = 0; half < 2; half++, q += 32)
			for (int j = 0; j < 4; j++)
				for (int g = 0; g < 32; g += 8) {
					__m256i v = bits(u8x8(q + g), 2 * j, 3);
					if (three)
						v = _mm256_sub_epi32(v, _mm256_slli_epi32(_mm256_xor_si256(bits(u8x8(x + g), 4 * half + j, 1),
												       _mm256_set1_epi32(1)),
										    2));
					const int i = 8 * half + 2 * j + g / 16;
					put8(y + 128 * half + 32 * j + g, v, sc[i], mn[i], !three);
				}
	}
}

typedef void dequant_fn(const char *x, float *y, int64_t k);
static void dequant_q2_k(const char *x, float *y, int64_t k) { dequant_q23_k((const uint8_t *)x, y, k, false); }
static void dequant_q3_k(const char *x, float *y, int64_t k) { dequant_q23_k((const uint8_t *)x, y, k, true); }
static void dequant_q4_k(const char *x, float *y, int64_t k) { dequant_q45_k((const uint8_t *)x, y, k, false); }
static void dequant_q5_k(const char *x, float *y, int64_t k) { dequant_q45_k((const uint8_t *)x, y, k, true); }

// dequants[t] writes k values of a row quantized as t; a type it lacks
// goes through ggml's to_float.
static dequant_fn *const dequants[GGML_TYPE_COUNT] = {
	[GGML_TYPE_Q4_0] = dequant_q4_0, [GGML_TYPE_Q4_1] = dequant_q4_1, [GGML_TYPE_Q5_0] = dequant_q5_0,
	[GGML_TYPE_Q8_0] = dequant_q8_0, [GGML_TYPE_Q2_K] = dequant_q2_k, [GGML_TYPE_Q3_K] = dequant_q3_k,
	[GGML_TYPE_Q4_K] = dequant_q4_k, [GGML_TYPE_Q5_K] = dequant_q5_k, [GGML_TYPE_Q6_K] = dequant_q6_k,
};

static bool qtakes(const struct ggml_tensor *dst) {
	const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
	return dst->op == GGML_OP_MUL_MAT && dst->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32 && qtype(a->type) &&
	       ggml_get_type_traits(a->type)->to_float != NULL && a->ne[0] % ggml_blck_size(a->type) == 0 &&
	       a->nb[0] == ggml_type_size(a->type) && b->nb[0] == sizeof(float) && dst->nb[0] == sizeof(float) &&
	       b->nb[1] % sizeof(float) == 0 && dst->nb[1] % sizeof(float) == 0 && b->ne[2] % a->ne[2] == 0 &&
	       b->ne[3] % a->ne[3] == 0;
}

static int64_t qchunk(int64_t n) { return n < QCHUNK ? n : QCHUNK; }

// A thread's floats: its MC rows of dequantized, packed weights, then the
// MR rows it dequantizes before packing them.
static size_t qthread_floats(const struct ggml_tensor *a) {
	return (MC + MR) * qk_block(a->ne[0], ggml_blck_size(a->type)) + 32;
}

static size_t qpanel_floats(const struct ggml_tensor *dst) {
	const struct ggml_tensor *b = dst->src[1];
	return b->ne[2] * b->ne[3] * panels(qchunk(b->ne[1])) * panel_floats(b->ne[0]);
}

static size_t qwork_bytes(const struct ggml_tensor *dst, int n_threads) {
	return 64 + (qpanel_floats(dst) + n_threads * qthread_floats(dst->src[0])) * sizeof(float);
}

static float *qalign64(void *p) { return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

// qrows computes dst's columns i0..i1-1 (src0's rows, nb01 bytes apart at
// a) for n rows of src1's packed panels: MC rows at a time, for each block
// of k (in order, so each output's sums are the same), each MR-row panel
// dequantized into tmp and packed into buf. Each row's blocks are read
// while it is in cache, and the next MC rows are prefetched into L2 as the
// first block is dequantized: the loads of weights streamed from memory
// (Gemma 3's 168 MB head, once per 64-row part) stalled the dequantizing.
static void qrows(const struct ggml_tensor *src0, const char *a, const float *bpack, int64_t n, float *c, int64_t ldc,
		  int64_t i0, int64_t i1, float *buf, float *tmp) {
	const int64_t k = src0->ne[0], blck = ggml_blck_size(src0->type), kcmax = qk_block(k, blck);
	const size_t tsize = ggml_type_size(src0->type), row = src0->nb[1], bytes = k / blck * tsize;
	const ggml_to_float_t to_float = ggml_get_type_traits(src0->type)->to_float;
	dequant_fn *const fast = dequants[src0->type];
	for (int64_t b0 = i0; b0 < i1; b0 += MC) {
		const int64_t b1 = b0 + MC < i1 ? b0 + MC : i1;
		for (int64_t k0 = 0; k0 < k; k0 += kcmax) {
			const int64_t kc = k - k0 < kcmax ? k - k0 : kcmax;
			for (int64_t i = b0; i < b1; i += MR) {
				const int64_t r = b1 - i < MR ? b1 - i : MR;
				for (int64_t ii = 0; ii < r; ii++) {
					if (k0 == 0 && i + ii + MC < i1)
						for (size_t o = 0; o < bytes + 64; o += 64)
							_mm_prefetch(a + (i + ii + MC) * row + o, _MM_HINT_T1);
					const char *x = a + (i + ii) * row + k0 / blck * tsize;
					if (fast)
						fast(x, tmp + ii * kc, kc);
					else
						to_float(x, tmp + ii * kc, kc);
				}
				pack((struct operand){(const char *)tmp, kc, F32}, r, MR, 0, kc, buf + (i - b0) * kc);
			}
			for (int64_t j = 0; j < n; j += NR) {
				const float *bp = bpack + (j / NR) * panel_floats(k) + k0 * NR;
				for (int64_t i = b0; i < b1; i += MR)
					tile(kc, buf + (i - b0) * kc, bp, c + j * ldc + i, ldc, b1 - i < MR ? b1 - i : MR,
					     n - j < NR ? n - j : NR, k0 > 0);
			}
		}
	}
}
#endif // UDGAM_GEMM

// udgam_qgemm_wsize is the work buffer udgam_qgemm needs for dst with
// n_threads, 0 when it leaves dst to ggml.
size_t udgam_qgemm_wsize(const struct ggml_tensor *dst, int n_threads) {
#ifdef UDGAM_GEMM
	return qtakes(dst) ? qwork_bytes(dst, n_threads) : 0;
#else
	(void)dst, (void)n_threads;
	return 0;
#endif
}

// udgam_qgemm computes dst on every thread of params and returns true, or
// returns false, having done nothing, when it leaves dst to ggml.
bool udgam_qgemm(const struct ggml_compute_params *params, struct ggml_tensor *dst) {
#ifdef UDGAM_GEMM
	if (!qtakes(dst))
		return false;
	const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
	const int64_t k = a->ne[0], n = b->ne[1];
	const int ith = params->ith, nth = params->nth;
	GGML_ASSERT(params->wsize >= qwork_bytes(dst, nth));
	const int64_t batches = b->ne[2] * b->ne[3], chunk = qchunk(n), bpanels = panels(chunk);
	float *bpack = qalign64(params->wdata);
	float *buf = qalign64(bpack + qpanel_floats(dst) + ith * qthread_floats(a));
	float *tmp = qalign64(buf + MC * qk_block(k, ggml_blck_size(a->type)));
	for (int64_t j0 = 0; j0 < n; j0 += chunk) {
		const int64_t nc = n - j0 < chunk ? n - j0 : chunk;
		if (j0 > 0)
			ggml_barrier(params->threadpool); // every thread is done with the last chunk's panels
		// src1's panels of rows j0..j0+nc-1, batch after batch, shared out
		// among the threads.
		for (int64_t u = ith; u < batches * bpanels; u += nth) {
			const int64_t batch = u / bpanels, j = u % bpanels * NR;
			if (j >= nc)
				continue;
			const char *x = (const char *)b->data + batch % b->ne[2] * b->nb[2] + batch / b->ne[2] * b->nb[3] +
					(j0 + j) * b->nb[1];
			pack((struct operand){x, b->nb[1] / sizeof(float), F32}, nc - j < NR ? nc - j : NR, NR, 0, k,
			     bpack + u * panel_floats(k));
		}
		ggml_barrier(params->threadpool);
		for (struct share s = share_of(dst, ith, nth); share_next(dst, &s);)
			qrows(a, s.a, bpack + s.batch * bpanels * panel_floats(k), nc, (float *)(s.c + j0 * dst->nb[1]),
			      dst->nb[1] / sizeof(float), s.i0, s.i1, buf, tmp);
	}
	return true;
#else
	(void)params, (void)dst;
	return false;
#endif
}

// The output head outside the graph (patch 0013): runner/llama decodes a
// step with the head left out and multiplies the step's hidden rows by
// vocabulary panels of it here, on its own threads, taking each panel's
// log-softmax while it is in cache. qrows is the graph's product, so each
// logit is the same bits as udgam_qgemm's (the blocks of k depend on k and
// the type alone; a row's sums neither on its place in a tile nor on the
// rows beside it).
#include "ggml-backend.h"

// udgam_head_supported says whether udgam_head multiplies by w: a 2-D
// quantized weight this file takes, in host memory as the file laid it
// out (not repacked by a CPU extra buffer). Builds without the kernels
// (arm64, x86 below AVX2) say no, and the runner decodes in parts.
bool udgam_head_supported(const struct ggml_tensor *w) {
#ifdef UDGAM_GEMM
	return w != NULL && w->data != NULL && w->buffer != NULL && ggml_backend_buffer_is_host(w->buffer) &&
	       w->extra == NULL && qtype(w->type) && ggml_get_type_traits(w->type)->to_float != NULL &&
	       w->ne[0] % ggml_blck_size(w->type) == 0 && w->nb[0] == ggml_type_size(w->type) && w->ne[2] == 1 &&
	       w->ne[3] == 1;
#else
	(void)w;
	return false;
#endif
}

// udgam_head_pack_floats is the size of udgam_head_pack's output for n rows
// of k floats; udgam_head_work_floats that of one thread's work buffer for
// w. Both buffers must be 64-byte aligned.
size_t udgam_head_pack_floats(int64_t n, int64_t k) {
#ifdef UDGAM_GEMM
	return panels(n) * panel_floats(k);
#else
	(void)n, (void)k;
	return 0;
#endif
}

size_t udgam_head_work_floats(const struct ggml_tensor *w) {
#ifdef UDGAM_GEMM
	return qthread_floats(w) + 32;
#else
	(void)w;
	return 0;
#endif
}

// udgam_head_pack packs n hidden rows of k floats, ld floats apart, once
// per step for every panel's product (as udgam_qgemm packs src1).
void udgam_head_pack(const float *h, int64_t n, int64_t ld, int64_t k, float *out) {
#ifdef UDGAM_GEMM
	for (int64_t j = 0; j < n; j += NR)
		pack((struct operand){(const char *)(h + j * ld), ld, F32}, n - j < NR ? n - j : NR, NR, 0, k,
		     out + j / NR * panel_floats(k));
#else
	(void)h, (void)n, (void)ld, (void)k, (void)out;
#endif
}

// udgam_head writes the logits of vocabulary rows v0..v1-1 of w for the n
// packed hidden rows, row j's at out[j*ldo .. j*ldo + v1-v0), on the
// calling thread with its work buffer.
void udgam_head(const struct ggml_tensor *w, const float *packed, int64_t n, int64_t v0, int64_t v1, float *out, int64_t ldo,
		float *work) {
#ifdef UDGAM_GEMM
	float *buf = qalign64(work);
	float *tmp = qalign64(buf + MC * qk_block(w->ne[0], ggml_blck_size(w->type)));
	qrows(w, (const char *)w->data + v0 * w->nb[1], packed, n, out, ldo, 0, v1 - v0, buf, tmp);
#else
	(void)w, (void)packed, (void)n, (void)v0, (void)v1, (void)out, (void)ldo, (void)work;
#endif
}
