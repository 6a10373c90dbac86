// gemmbench times gemm.c against llamafile's tinyBLAS on one thread, one
// product at a time, with packing (and ggml's rounding of src1 to float16
// or bfloat16 for tinyBLAS) included, the two alternating round by round
// (GFLOP/s of each one's best round; the ratio is the median of the
// rounds' ratios), and measures each one's rounding error (RMS
// over a sample of outputs) against a float64 sum of the same products:
// the per-product tables of BENCHMARKS.md (issues 17 and 31). gemmbench.sh
// builds it against the engine copy's sgemm.cpp. Arguments: the number
// of rounds (default 15), then shape names to run only those.
#define UDGAM_GEMM_STANDALONE
#include "gemm.c"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// What sgemm.cpp needs from ggml, for one thread.
struct ggml_compute_params {
	int ith, nth;
	size_t wsize;
	void *wdata;
	void *threadpool;
};
bool llamafile_sgemm(const struct ggml_compute_params *, int64_t, int64_t, int64_t, const void *, int64_t, const void *,
		     int64_t, void *, int64_t, int, int, int);
float ggml_table_f32_f16[1 << 16];
static int chunk;
void ggml_threadpool_chunk_set(void *tp, int v) { (void)tp, chunk = v; }
int ggml_threadpool_chunk_add(void *tp, int v) {
	(void)tp;
	int old = chunk;
	chunk += v;
	return old;
}
void ggml_barrier(void *tp) { (void)tp; }
void ggml_abort(const char *file, int line, const char *fmt, ...) {
	fprintf(stderr, "ggml_abort at %s:%d\n", file, line);
	abort();
}
void ggml_log_internal(int level, const char *fmt, ...) { (void)level, (void)fmt; }

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

enum { GGML_F32 = 0, GGML_F16 = 1, GGML_BF16 = 30 }; // ggml_type's values, as sgemm.cpp takes them

static int cmp_double(const void *x, const void *y) {
	const double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

static double median(double *v, int n) {
	qsort(v, n, sizeof v[0], cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint16_t to_bf16(float x) {
	uint32_t u;
	memcpy(&u, &x, 4);
	if ((u & 0x7fffffff) > 0x7f800000)
		return (u >> 16) | 64;
	return (u + (0x7fff + ((u >> 16) & 1))) >> 16;
}

static float from_bf16(uint16_t h) {
	const uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

// Weights: float16, bfloat16 widened to float32 (tile), bfloat16 in
// pairs (tile_bf16, where the CPU has AVX512-BF16), float32.
enum wtype { W16, WB16, WB16P, W32 };

int main(int argc, char **argv) {
	const int rounds = argc > 1 ? atoi(argv[1]) : 15;
	for (int i = 0; i < 1 << 16; i++)
		ggml_table_f32_f16[i] = _cvtsh_ss((uint16_t)i);
	// SmolLM2-135M: n_embd 576, 3 key-value heads of 64, FFN 1536, vocab
	// 49,152; a batch of 512 tokens; attention over a 2,048-token window.
	const struct {
		const char *name;
		int64_t m, k, n;
		enum wtype w;
		const char *what;
	} shapes[] = {
		{"qo", 576, 576, 512, W16, "q, o"},
		{"kv", 192, 576, 512, W16, "k, v"},
		{"up", 1536, 576, 512, W16, "gate, up"},
		{"down", 576, 1536, 512, W16, "down"},
		{"head", 49152, 576, 512, W16, "output head"},
		{"head128", 8192, 576, 128, W16, "output head, 128 rows"},
		{"head64", 8192, 576, 64, W16, "output head, 64 rows"},
		{"head32", 8192, 576, 32, W16, "output head, 32 rows"},
		{"phead128", 8192, 576, 128, WB16P, "output head, 128 rows"},
		{"phead64", 8192, 576, 64, WB16P, "output head, 64 rows"},
		{"phead32", 8192, 576, 32, WB16P, "output head, 32 rows"},
		{"fhead128", 8192, 576, 128, W32, "output head, 128 rows"},
		{"bqo", 576, 576, 512, WB16, "q, o"},
		{"bup", 1536, 576, 512, WB16, "gate, up"},
		{"bdown", 576, 1536, 512, WB16, "down"},
		{"bhead", 49152, 576, 512, WB16, "output head"},
		{"pqo", 576, 576, 512, WB16P, "q, o"},
		{"pup", 1536, 576, 512, WB16P, "gate, up"},
		{"pdown", 576, 1536, 512, WB16P, "down"},
		{"phead", 49152, 576, 512, WB16P, "output head"},
		{"fqo", 576, 576, 512, W32, "q, o"},
		{"fup", 1536, 576, 512, W32, "gate, up"},
		{"fdown", 576, 1536, 512, W32, "down"},
		{"fhead", 49152, 576, 512, W32, "output head"},
		{"fhead64", 8192, 576, 64, W32, "output head, 64 rows"},
		{"fhead32", 8192, 576, 32, W32, "output head, 32 rows"},
		{"scores32", 2048, 64, 32, W32, "attention's scores, one head, 32 queries"},
		{"scores", 2048, 64, 512, W32, "attention's scores, one head"},
		{"values", 64, 2048, 512, W32, "attention's values (left to tinyBLAS)"},
		// Edges: partial tiles and panels, k not a multiple of 8.
		{"odd", 200, 75, 37, W16, "edges"},
		{"bodd", 200, 75, 37, WB16, "edges"},
		{"podd", 200, 70, 37, WB16P, "edges"},
		{"fodd", 200, 1000, 37, W32, "edges"},
	};
	static const char *wname[] = {"f16", "bf16", "bf16 pairs", "f32"};
	printf("| product (m x k, n rows of src1) | gemm.c GFLOP/s | tinyBLAS GFLOP/s | ratio (median) | RMS error, gemm.c vs tinyBLAS |\n");
	printf("|---|---|---|---|---|\n");
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		if (argc > 2) {
			bool want = false;
			for (int i = 2; i < argc; i++)
				want |= strcmp(argv[i], shapes[s].name) == 0;
			if (!want)
				continue;
		}
		const int64_t m = shapes[s].m, k = shapes[s].k, n = shapes[s].n;
		const enum wtype w = shapes[s].w;
		const bool bf = w == WB16 || w == WB16P;
		tile_fn *kernel = tile;
		int64_t kp = k; // elements of k as packed
		if (w == WB16P) {
#ifdef UDGAM_GEMM_BF16
			if (!has_bf16())
				continue;
			kernel = tile_bf16, kp = k / 2;
#else
			continue;
#endif
		}
		void *a = aligned_alloc(64, 4 * m * k);
		float *b = aligned_alloc(64, 4 * n * k), *c = aligned_alloc(64, 4 * m * n), *c2 = aligned_alloc(64, 4 * m * n);
		uint16_t *bh = aligned_alloc(64, 2 * n * k);
		float *bpack = aligned_alloc(64, (panels(n) * panel_floats(k) * 4 + 63) / 64 * 64);
		float *buf = aligned_alloc(64, (rows_floats(kp) * 4 + 63) / 64 * 64);
		srand(1);
		for (int64_t i = 0; i < m * k; i++) {
			const float v = rand() / (float)RAND_MAX - 0.5f;
			if (w == W16)
				((uint16_t *)a)[i] = _cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT);
			else if (bf)
				((uint16_t *)a)[i] = to_bf16(v);
			else
				((float *)a)[i] = v;
		}
		for (int64_t i = 0; i < n * k; i++)
			b[i] = rand() / (float)RAND_MAX - 0.5f;
		const struct operand pa = {a, w == WB16P ? k / 2 : k, w == W16 ? F16 : w == WB16 ? BF16 : F32};
		const enum kind bk = w == W16 ? F32_AS_F16 : w == WB16 ? F32_AS_BF16 : w == WB16P ? F32_AS_BF16_PAIRS : F32;
		const int gtype = w == W16 ? GGML_F16 : bf ? GGML_BF16 : GGML_F32;
		struct ggml_compute_params params = {0, 1, 0, NULL, NULL};
		double ours[rounds], theirs[rounds];
		bool refused = false;
		for (int r = 0; r < rounds; r++) {
			double t = now();
			for (int64_t u = 0; u < panels(n); u++)
				pack((struct operand){(const char *)(b + u * NR * k), kp, bk}, n - u * NR < NR ? n - u * NR : NR, NR, 0, kp,
				     bpack + u * panel_floats(kp));
			rows(kernel, pa, bpack, n, kp, c, m, 0, m, buf);
			ours[r] = now() - t;
			// tinyBLAS with ggml's own step before it: src1 to its
			// vec_dot_type (ggml's scalar loop for bfloat16).
			t = now();
			if (w == W16)
				for (int64_t i = 0; i < n * k; i += 8)
					_mm_storeu_si128((__m128i *)(bh + i), _mm256_cvtps_ph(_mm256_loadu_ps(b + i), _MM_FROUND_TO_NEAREST_INT));
			else if (bf)
				for (int64_t i = 0; i < n * k; i++)
					bh[i] = to_bf16(b[i]);
			chunk = 0;
			// tinyBLAS refuses k not a multiple of its vector: then only
			// gemm.c's error is measured (an edge shape).
			refused = !llamafile_sgemm(&params, m, n, k, a, k, w == W32 ? (void *)b : (void *)bh, k, c2, m, gtype, gtype,
						   GGML_F32);
			if (refused)
				memcpy(c2, c, 4 * m * n);
			theirs[r] = now() - t;
		}
		double e_ours = 0, e_theirs = 0, most = 0;
		long count = 0;
		const int64_t dj = n < 64 ? 1 : 5, di = m < 256 ? 1 : 3; // every output of an edge shape
		for (int64_t j = 0; j < n; j += dj)
			for (int64_t i = 0; i < m; i += di) {
				double sum = 0;
				for (int64_t kk = 0; kk < k; kk++) {
					double x, y;
					if (w == W16) {
						x = _cvtsh_ss(((uint16_t *)a)[i * k + kk]);
						y = _cvtsh_ss(_cvtss_sh(b[j * k + kk], _MM_FROUND_TO_NEAREST_INT));
					} else if (bf) {
						x = from_bf16(((uint16_t *)a)[i * k + kk]);
						y = from_bf16(to_bf16(b[j * k + kk]));
					} else {
						x = ((float *)a)[i * k + kk];
						y = b[j * k + kk];
					}
					sum += x * y;
				}
				e_ours += pow(c[j * m + i] - sum, 2);
				e_theirs += pow(c2[j * m + i] - sum, 2);
				most = fmax(most, fabs(c[j * m + i] - sum));
				count++;
			}
		// Each round's ratio compares two runs a few milliseconds apart;
		// their median, and each one's best round, hold up best on a
		// machine others share.
		double ratio[rounds], to = ours[0], tt = theirs[0];
		for (int r = 0; r < rounds; r++) {
			ratio[r] = theirs[r] / ours[r];
			to = fmin(to, ours[r]), tt = fmin(tt, theirs[r]);
		}
		const double flops = 2.0 * m * n * k;
		if (refused)
			printf("| %s %ld x %ld, %ld (%s) | %.1f | refused | | %.1e, at most %.1e |\n", wname[w], (long)m, (long)k,
			       (long)n, shapes[s].what, flops / to / 1e9, sqrt(e_ours / count), most);
		else
			printf("| %s %ld x %ld, %ld (%s) | %.1f | %.1f | %.2f | %.1e vs %.1e |\n", wname[w], (long)m, (long)k, (long)n,
			       shapes[s].what, flops / to / 1e9, flops / tt / 1e9, median(ratio, rounds), sqrt(e_ours / count),
			       sqrt(e_theirs / count));
		fflush(stdout);
		free(a), free(b), free(c), free(c2), free(bh), free(bpack), free(buf);
	}
	return 0;
}
