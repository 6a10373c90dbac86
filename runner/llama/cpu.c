//go:build cgo

#include "cpu.h"

// Float16 arithmetic on arm64 makes ggml sum float16 products in float16
// (its dot products, tinyBLAS, the SVE paths), where x86 and arm64's
// baseline sum them in float32: the Makefile compiles arm64 with +nofp16
// (issue 38). macOS builds with Accelerate, its own path (unverified).
#if defined(__aarch64__) && !defined(__APPLE__) && (defined(__ARM_FEATURE_FP16_VECTOR_ARITHMETIC) || defined(__ARM_FEATURE_SVE))
#error "udgam-ci: arm64 compiled with float16 arithmetic (or SVE): ggml would sum float16 products in float16; build with make, whose flags add +nofp16"
#endif

const char *udgam_cpu_compiled(void) {
	return ""
#if defined(__x86_64__)
#ifdef __AVX__
		" AVX"
#endif
#ifdef __AVX2__
		" AVX2"
#endif
#ifdef __FMA__
		" FMA"
#endif
#ifdef __F16C__
		" F16C"
#endif
#ifdef __BMI2__
		" BMI2"
#endif
#ifdef __AVX512F__
		" AVX-512F"
#endif
#ifdef __AVX512BW__
		" AVX-512BW"
#endif
#ifdef __AVX512VL__
		" AVX-512VL"
#endif
#ifdef __AVX512BF16__
		" AVX-512BF16"
#endif
#endif
		;
}

// The widest float vector this build's flags allow: the FMA peak the
// engine's own kernels can reach, compiled with the same -march.
#if defined(__AVX512F__)
typedef float udgam_vf __attribute__((vector_size(64)));
#else
typedef float udgam_vf __attribute__((vector_size(32)));
#endif

double udgam_fma_loop(long iters, float seed, float *sink) {
	udgam_vf b = {0}, c = {0};
	b += 1.0000001f;
	c += 1e-7f;
	// Distinct starting values, so the compiler cannot fold the chains
	// into one.
	udgam_vf a0 = b * seed, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5,
		a6 = a0 + 6, a7 = a0 + 7, a8 = a0 + 8, a9 = a0 + 9, a10 = a0 + 10, a11 = a0 + 11;
	for (long i = 0; i < iters; i++) {
		a0 = a0 * b + c; a1 = a1 * b + c; a2 = a2 * b + c; a3 = a3 * b + c;
		a4 = a4 * b + c; a5 = a5 * b + c; a6 = a6 * b + c; a7 = a7 * b + c;
		a8 = a8 * b + c; a9 = a9 * b + c; a10 = a10 * b + c; a11 = a11 * b + c;
	}
	udgam_vf s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
	*sink = s[0];
	return (double)iters * 12 * (sizeof(udgam_vf) / sizeof(float)) * 2;
}
