// gemmbench times gemm.c against llamafile's tinyBLAS on one thread, one
// product at a time, with packing included, and measures each one's
// rounding error (RMS over a sample of outputs) against a float64 sum of
// the same products: the per-product table of BENCHMARKS.md ("Third
// pass"). gemmbench.sh builds it against the engine copy's sgemm.cpp.
#define UDGAM_GEMM_STANDALONE
#include "gemm.c"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

enum { GGML_F32 = 0, GGML_F16 = 1 }; // ggml_type's values, as sgemm.cpp takes them

int main(void) {
	for (int i = 0; i < 1 << 16; i++)
		ggml_table_f32_f16[i] = _cvtsh_ss((uint16_t)i);
	const struct {
		int64_t m, k, n;
		bool f16;
		const char *what;
	} shapes[] = {
		{576, 576, 512, true, "q, o"},
		{192, 576, 512, true, "k, v"},
		{1536, 576, 512, true, "gate, up"},
		{576, 1536, 512, true, "down"},
		{8192, 576, 512, true, "output head"},
		{8192, 576, 128, true, "output head, 128 rows"},
		{8192, 576, 64, true, "output head, 64 rows"},
		{8192, 576, 32, true, "output head, 32 rows"},
		{2048, 64, 512, false, "attention's scores, one head"},
		{64, 2048, 512, false, "attention's values (left to tinyBLAS)"},
	};
	printf("| product (m x k, n rows of src1) | gemm.c GFLOP/s | tinyBLAS GFLOP/s | ratio | RMS error, gemm.c vs tinyBLAS |\n");
	printf("|---|---|---|---|---|\n");
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		const int64_t m = shapes[s].m, k = shapes[s].k, n = shapes[s].n;
		const bool f16 = shapes[s].f16;
		void *a = aligned_alloc(64, 4 * m * k);
		float *b = aligned_alloc(64, 4 * n * k), *c = aligned_alloc(64, 4 * m * n), *c2 = aligned_alloc(64, 4 * m * n);
		uint16_t *bh = aligned_alloc(64, 2 * n * k);
		float *bpack = aligned_alloc(64, (panels(n) * panel_floats(k) * 4 + 63) / 64 * 64);
		float *buf = aligned_alloc(64, MC * k_block(k) * 4);
		srand(1);
		for (int64_t i = 0; i < m * k; i++) {
			const float v = rand() / (float)RAND_MAX - 0.5f;
			if (f16)
				((uint16_t *)a)[i] = _cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT);
			else
				((float *)a)[i] = v;
		}
		for (int64_t i = 0; i < n * k; i++)
			b[i] = rand() / (float)RAND_MAX - 0.5f;
		const struct operand pa = {a, k, f16 ? F16 : F32};
		const enum kind bk = f16 ? F32_AS_F16 : F32;
		struct ggml_compute_params params = {0, 1, 0, NULL, NULL};
		double ours = 1e9, theirs = 1e9;
		for (int r = 0; r < 12; r++) {
			double t = now();
			for (int64_t u = 0; u < panels(n); u++)
				pack((struct operand){(const char *)(b + u * NR * k), k, bk}, n - u * NR < NR ? n - u * NR : NR, NR, 0, k,
				     bpack + u * panel_floats(k));
			rows(pa, bpack, n, k, c, m, 0, m, buf);
			ours = fmin(ours, now() - t);
			// tinyBLAS with ggml's own step before it: src1 to float16.
			t = now();
			if (f16)
				for (int64_t i = 0; i < n * k; i += 8)
					_mm_storeu_si128((__m128i *)(bh + i), _mm256_cvtps_ph(_mm256_loadu_ps(b + i), _MM_FROUND_TO_NEAREST_INT));
			chunk = 0;
			if (!llamafile_sgemm(&params, m, n, k, a, k, f16 ? (void *)bh : (void *)b, k, c2, m, f16 ? GGML_F16 : GGML_F32,
					     f16 ? GGML_F16 : GGML_F32, GGML_F32)) {
				fprintf(stderr, "tinyBLAS refused %ldx%ldx%ld\n", (long)m, (long)k, (long)n);
				return 1;
			}
			theirs = fmin(theirs, now() - t);
		}
		double e_ours = 0, e_theirs = 0;
		long count = 0;
		for (int64_t j = 0; j < n; j += 5)
			for (int64_t i = 0; i < m; i += 3) {
				double sum = 0;
				for (int64_t kk = 0; kk < k; kk++) {
					const double x = f16 ? _cvtsh_ss(((uint16_t *)a)[i * k + kk]) : ((float *)a)[i * k + kk];
					const double y = f16 ? _cvtsh_ss(_cvtss_sh(b[j * k + kk], _MM_FROUND_TO_NEAREST_INT)) : b[j * k + kk];
					sum += x * y;
				}
				e_ours += pow(c[j * m + i] - sum, 2);
				e_theirs += pow(c2[j * m + i] - sum, 2);
				count++;
			}
		const double flops = 2.0 * m * n * k;
		printf("| %s %ld x %ld, %ld (%s) | %.1f | %.1f | %.2f | %.1e vs %.1e |\n", f16 ? "f16" : "f32", (long)m, (long)k,
		       (long)n, shapes[s].what, flops / ours / 1e9, flops / theirs / 1e9, theirs / ours, sqrt(e_ours / count),
		       sqrt(e_theirs / count));
		free(a), free(b), free(c), free(c2), free(bh), free(bpack), free(buf);
	}
	return 0;
}
