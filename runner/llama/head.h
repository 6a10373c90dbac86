// The output head outside the graph: scripts/engine/patches/0013 leaves a
// model's head out of its graph, and scripts/engine/qgemm.c multiplies the
// step's hidden rows by panels of it (head.go).
#ifndef UDGAM_HEAD_H
#define UDGAM_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ggml.h"
#include "llama.h"

// The engine's (patch 0013): the contexts created after udgam_set_head_ok
// leave their model's head out where ok accepts it, and
// udgam_hidden_head returns the head a context left out, or NULL.
void udgam_set_head_ok(bool (*ok)(const struct ggml_tensor *w));
const struct ggml_tensor *udgam_hidden_head(const struct llama_context *ctx);

// The engine's (qgemm.c): whether udgam_head takes w; the sizes, in
// floats, of the packed hidden rows and of a thread's work buffer (both
// 64-byte aligned); the packing; the logits of w's rows v0..v1-1 for the
// n packed rows, row j's at out[j*ldo].
bool udgam_head_supported(const struct ggml_tensor *w);
size_t udgam_head_pack_floats(int64_t n, int64_t k);
size_t udgam_head_work_floats(const struct ggml_tensor *w);
void udgam_head_pack(const float *h, int64_t n, int64_t ld, int64_t k, float *out);
void udgam_head(const struct ggml_tensor *w, const float *packed, int64_t n, int64_t v0, int64_t v1, float *out, int64_t ldo,
		float *work);

// udgam_head_mode makes the contexts created next leave out the heads
// udgam_head takes (on) or keep every head in the graph.
void udgam_head_mode(bool on);

// udgam_panel_lse takes rows rows of width logits, ld floats apart: each
// row's maximum into mx[j] and its sum of exp(x - mx[j]) into sum[j]
// (udgam_row_max, udgam_sum_exp), NAN where a logit is not finite.
void udgam_panel_lse(const float *p, int rows, int width, int ld, float *mx, double *sum);

#endif
