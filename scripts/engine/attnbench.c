// attnbench times scripts/engine/attn.c on one thread at SmolLM2-135M's
// attention shape (9 query heads of 64 over 3 key heads, float32 cache)
// for the last 512 queries of a 2,048-token causal window, and checks it
// against a float64 computation; attnbench.sh builds it with the engine's
// flags. Times are the best of 25 runs in this thread's CPU time. It
// prints hashes of the output's bits and of the exponential's over a sweep
// of arguments down to where it flushes to 0: the AVX-512 kernel and the
// AVX2 one (PORTABLE=1) do the same operations in the same order, so both
// hashes match between the two builds.
#define UDGAM_ATTN_STANDALONE
#include "attn.c"

#include <stdio.h>
#include <time.h>

static double now(void) {
	struct timespec t;
	// This thread's CPU time: on a shared machine, what the kernel took
	// while it ran.
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ull;
static float uniform(void) {
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (float)((rng >> 40) * (1.0 / (1 << 24))) - 0.5f;
}

int main(int argc, char **argv) {
	const int64_t heads = 9, kvh = 3, d = 64, n_kv = argc > 1 ? atoi(argv[1]) : 2048, n_q = argc > 2 ? atoi(argv[2]) : 512;
	const int64_t p0 = n_kv - n_q;
	float *q = malloc(sizeof(float) * n_q * heads * d), *k = malloc(sizeof(float) * n_kv * kvh * d),
	      *v = malloc(sizeof(float) * n_kv * kvh * d), *out = malloc(sizeof(float) * n_q * heads * d);
	uint16_t *mask = malloc(2 * n_q * n_kv);
	for (int64_t i = 0; i < n_q * heads * d; i++) q[i] = 4 * uniform();
	for (int64_t i = 0; i < n_kv * kvh * d; i++) k[i] = 4 * uniform(), v[i] = uniform();
	for (int64_t i = 0; i < n_q; i++)
		for (int64_t j = 0; j < n_kv; j++) mask[i * n_kv + j] = j <= p0 + i ? 0 : 0xFC00;
	struct attn a = {
		.q = (char *)q, .k = (char *)k, .v = (char *)v, .mask = (char *)mask, .dst = out,
		.q1 = 4 * heads * d, .q2 = 4 * d, .q3 = 0, .k1 = 4 * kvh * d, .k2 = 4 * d, .k3 = 0,
		.v1 = 4 * kvh * d, .v2 = 4 * d, .v3 = 0, .m1 = 2 * n_kv, .m2 = 0, .m3 = 0, .d1 = 4 * d,
		.n_q = n_q, .n_kv = n_kv, .dk = d, .dv = d, .heads = heads, .seqs = 1,
		.rk2 = heads / kvh, .rk3 = 1, .rv2 = heads / kvh, .rv3 = 1, .mh = 1, .ms = 1, .scale = 0.125f,
	};
	struct buf b;
	if (!buf_init(&b, d, d, n_kv)) return 1;
	const int64_t n = attn_tasks(&a);
	double best = 1e9;
	for (int rep = 0; rep < 25; rep++) {
		double t0 = now();
		for (int64_t t = 0; t < n; t++) attn_task(&a, &b, t);
		double t1 = now() - t0;
		if (t1 < best) best = t1;
	}
	double flops = 0;
	for (int64_t i = 0; i < n_q; i++) flops += (double)(p0 + i + 1) * 4 * d * heads;
	if (argc > 3) { // timing alone (e.g. under perf stat -e cycles:u on a loaded machine)
		printf("n_kv %lld n_q %lld: %.2f ms\n", (long long)n_kv, (long long)n_q, best * 1e3);
		return 0;
	}
	// float64 reference
	double maxerr = 0, maxref = 0;
	double *s = malloc(sizeof(double) * n_kv);
	for (int64_t h = 0; h < heads; h++)
		for (int64_t i = 0; i < n_q; i += (i % 61 == 0 ? 1 : 7)) {
			const float *qi = q + i * heads * d + h * d;
			double mx = -INFINITY;
			for (int64_t j = 0; j <= p0 + i; j++) {
				const float *kj = k + j * kvh * d + (h / 3) * d;
				double acc = 0;
				for (int64_t c = 0; c < d; c++) acc += (double)qi[c] * kj[c];
				s[j] = acc * 0.125;
				if (s[j] > mx) mx = s[j];
			}
			double sum = 0;
			for (int64_t j = 0; j <= p0 + i; j++) sum += s[j] = exp(s[j] - mx);
			for (int64_t c = 0; c < d; c++) {
				double o = 0;
				for (int64_t j = 0; j <= p0 + i; j++) o += s[j] * v[j * kvh * d + (h / 3) * d + c];
				o /= sum;
				double e = fabs(o - out[i * heads * d + h * d + c]);
				if (e > maxerr) maxerr = e;
				if (fabs(o) > maxref) maxref = fabs(o);
			}
		}
	// FNV-1a over the output's bytes, and over vexp's at every float32 step
	// of 2^-16 from -128 to 0 (denormal results and the flush included).
	uint64_t hash = 14695981039346656037ull, ehash = hash;
	for (size_t i = 0; i < sizeof(float) * n_q * heads * d; i++) hash = (hash ^ ((const unsigned char *)out)[i]) * 1099511628211ull;
	float xs[VL], es[VL];
	for (int64_t i = 0; i < 128 << 16; i += VL) {
		for (int l = 0; l < VL; l++) xs[l] = -(float)(i + l) / 65536;
		vstoreu(es, vexp(vloadu(xs)));
		for (size_t c = 0; c < sizeof(es); c++) ehash = (ehash ^ ((const unsigned char *)es)[c]) * 1099511628211ull;
	}
	printf("n_kv %lld n_q %lld, %d lanes: %.2f ms, %.1f GFLOP/s (causal FLOPs), max |err| %.3g (max |out| %.3g), "
	       "output hash %016llx, exp hash %016llx\n",
	       (long long)n_kv, (long long)n_q, VL, best * 1e3, flops / best / 1e9, maxerr, maxref, (unsigned long long)hash,
	       (unsigned long long)ehash);
	return 0;
}
