// ggml's CPU kernels evaluated one operation at a time, outside any model:
// the probes that tell which kernels this binary was compiled with
// (gelu.go, rope.go, attn.go) and the tests of the kernels
// scripts/engine.sh installs (matmul.go, attn.go). Each returns 0, or 1
// where ggml could not allocate or compute the graph.
#ifndef UDGAM_KERNELS_H
#define UDGAM_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// udgam_ggml_gelu evaluates ggml's CPU GELU and GEGLU (with a gate of one)
// on n inputs, so Go can tell which kernel this binary was compiled with.
int udgam_ggml_gelu(const float *x, float *gelu, float *geglu, int n);

// udgam_ggml_rope turns one head x of dim values by ggml's CPU NEOX rope
// (base freq_base, no scaling) at each of n positions, into out (n * dim).
int udgam_ggml_rope(const float *x, int dim, const int32_t *pos, int n, float freq_base, float *out);

// udgam_ggml_flash_attn evaluates ggml's CPU flash attention on threads
// threads. Queries q are seqs x nq tokens x heads x dk floats, keys k
// seqs x nkv cells x kvh x dk (float16 when k_f16), values v the same
// with dv (float16 when v_f16), as llama.cpp's cache lays them out; mask
// (NULL for none) nq x nkv, rounded to float16 and shared by the
// sequences; out seqs x nq x heads x dv.
int udgam_ggml_flash_attn(const float *q, const float *k, const float *v, const float *mask,
                          int seqs, int nq, int nkv, int heads, int kvh, int dk, int dv,
                          bool k_f16, bool v_f16, float scale, float softcap, int threads, float *out);

// udgam_ggml_mul_mat evaluates ggml's CPU matrix product of a (ab batches
// of m rows of k values, lda apart; float16 when a_f16) and b (bb batches
// of n rows of k, ldb apart; bb a multiple of ab, ggml's broadcast) on
// threads threads, into c (bb batches of n rows of m). *work is the size
// of the work buffer ggml's plan reserved for it.
int udgam_ggml_mul_mat(const float *a, bool a_f16, int m, int k, int lda, int ab,
                       const float *b, int n, int ldb, int bb, int threads, float *c, size_t *work);

// udgam_ggml_mul_mat_q quantizes a (m rows of k values) to the ggml type
// named type ("q4_0", "q4_K", ...), writes its dequantized values to deq
// (m x k) and evaluates ggml's CPU product of it and b (n rows of k, float32)
// on threads threads, into c (n rows of m). It returns 1 for a type ggml
// cannot dequantize or a k that is not a whole number of its blocks.
int udgam_ggml_mul_mat_q(const char *type, const float *a, int m, int k, const float *b, int n, int threads,
                         float *deq, float *c, size_t *work);

#endif
