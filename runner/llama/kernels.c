//go:build cgo

#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "ggml-cpu.h"
#include "kernels.h"

int udgam_ggml_gelu(const float *x, float *gelu, float *geglu, int n) {
	struct ggml_init_params p = { 4u << 20, NULL, false };
	ggml_cpu_init();
	struct ggml_context *ctx = ggml_init(p);
	if (ctx == NULL) {
		return 1;
	}
	struct ggml_tensor *a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
	struct ggml_tensor *g = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
	memcpy(a->data, x, n * sizeof(float));
	for (int i = 0; i < n; i++) {
		((float *)g->data)[i] = 1.0f;
	}
	struct ggml_tensor *y = ggml_gelu(ctx, a);
	struct ggml_tensor *z = ggml_geglu_split(ctx, a, g);
	struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, 16, false);
	ggml_build_forward_expand(gf, y);
	ggml_build_forward_expand(gf, z);
	int rc = ggml_graph_compute_with_ctx(ctx, gf, 1) != GGML_STATUS_SUCCESS;
	if (rc == 0) {
		memcpy(gelu, y->data, n * sizeof(float));
		memcpy(geglu, z->data, n * sizeof(float));
	}
	ggml_free(ctx);
	return rc;
}

int udgam_ggml_rope(const float *x, int dim, const int32_t *pos, int n, float freq_base, float *out) {
	struct ggml_init_params p = { 4u << 20, NULL, false };
	ggml_cpu_init();
	struct ggml_context *ctx = ggml_init(p);
	if (ctx == NULL) {
		return 1;
	}
	struct ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, dim, 1, n);
	struct ggml_tensor *ps = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n);
	for (int i = 0; i < n; i++) {
		memcpy((float *)a->data + (size_t)i * dim, x, dim * sizeof(float));
	}
	memcpy(ps->data, pos, n * sizeof(int32_t));
	struct ggml_tensor *y = ggml_rope_ext(ctx, a, ps, NULL, dim, GGML_ROPE_TYPE_NEOX, 0, freq_base, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
	struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, 16, false);
	ggml_build_forward_expand(gf, y);
	int rc = ggml_graph_compute_with_ctx(ctx, gf, 1) != GGML_STATUS_SUCCESS;
	if (rc == 0) {
		memcpy(out, y->data, (size_t)n * dim * sizeof(float));
	}
	ggml_free(ctx);
	return rc;
}

int udgam_ggml_flash_attn(const float *q, const float *k, const float *v, const float *mask,
                          int seqs, int nq, int nkv, int heads, int kvh, int dk, int dv,
                          bool k_f16, bool v_f16, float scale, float softcap, int threads, float *out) {
	const size_t nqv = (size_t)seqs * nq * heads * dk, nk = (size_t)seqs * nkv * kvh * dk,
	             nv = (size_t)seqs * nkv * kvh * dv, nm = (size_t)nq * nkv, no = (size_t)seqs * nq * heads * dv;
	struct ggml_init_params p = { 4 * (nqv + nk + nv + nm + no) + 16 * ggml_tensor_overhead() + ggml_graph_overhead_custom(16, false) + 4096, NULL, false };
	ggml_cpu_init();
	struct ggml_context *ctx = ggml_init(p);
	if (ctx == NULL) {
		return 1;
	}
	struct ggml_tensor *qt = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, dk, heads, nq, seqs);
	memcpy(qt->data, q, nqv * sizeof(float));
	struct ggml_tensor *kt = ggml_new_tensor_4d(ctx, k_f16 ? GGML_TYPE_F16 : GGML_TYPE_F32, dk, kvh, nkv, seqs);
	struct ggml_tensor *vt = ggml_new_tensor_4d(ctx, v_f16 ? GGML_TYPE_F16 : GGML_TYPE_F32, dv, kvh, nkv, seqs);
	if (k_f16) {
		ggml_fp32_to_fp16_row(k, kt->data, nk);
	} else {
		memcpy(kt->data, k, nk * sizeof(float));
	}
	if (v_f16) {
		ggml_fp32_to_fp16_row(v, vt->data, nv);
	} else {
		memcpy(vt->data, v, nv * sizeof(float));
	}
	struct ggml_tensor *mt = NULL;
	if (mask != NULL) {
		mt = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, nkv, nq);
		ggml_fp32_to_fp16_row(mask, mt->data, nm);
	}
	struct ggml_tensor *y = ggml_flash_attn_ext(ctx, ggml_permute(ctx, qt, 0, 2, 1, 3), ggml_permute(ctx, kt, 0, 2, 1, 3),
	                                            ggml_permute(ctx, vt, 0, 2, 1, 3), mt, scale, 0.0f, softcap);
	ggml_flash_attn_ext_set_prec(y, GGML_PREC_F32);
	struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, 16, false);
	ggml_build_forward_expand(gf, y);
	int rc = ggml_graph_compute_with_ctx(ctx, gf, threads) != GGML_STATUS_SUCCESS;
	if (rc == 0) {
		memcpy(out, y->data, no * sizeof(float));
	}
	ggml_free(ctx);
	return rc;
}

// mul_mat_compute evaluates the product y on threads threads with the work
// buffer ggml's plan asks for (its size to *work), copies its csz bytes to
// c and frees ctx.
static int mul_mat_compute(struct ggml_context *ctx, struct ggml_tensor *y, int threads, float *c, size_t csz, size_t *work) {
	struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, 16, false);
	ggml_build_forward_expand(gf, y);
	struct ggml_cplan plan = ggml_graph_plan(gf, threads, NULL);
	*work = plan.work_size;
	void *buf = plan.work_size > 0 ? malloc(plan.work_size) : NULL;
	plan.work_data = buf;
	int rc = (plan.work_size > 0 && buf == NULL) || ggml_graph_compute(gf, &plan) != GGML_STATUS_SUCCESS;
	if (rc == 0) {
		memcpy(c, y->data, csz);
	}
	free(buf);
	ggml_free(ctx);
	return rc;
}

int udgam_ggml_mul_mat(const float *a, bool a_f16, int m, int k, int lda, int ab,
                       const float *b, int n, int ldb, int bb, int threads, float *c, size_t *work) {
	const size_t asz = (size_t)ab * m * lda * (a_f16 ? 2 : 4), bsz = (size_t)bb * n * ldb * 4, csz = (size_t)bb * n * m * 4;
	struct ggml_init_params p = { asz + bsz + csz + 16 * ggml_tensor_overhead() + ggml_graph_overhead_custom(16, false) + 4096, NULL, false };
	ggml_cpu_init();
	struct ggml_context *ctx = ggml_init(p);
	if (ctx == NULL) {
		return 1;
	}
	struct ggml_tensor *af = ggml_new_tensor_3d(ctx, a_f16 ? GGML_TYPE_F16 : GGML_TYPE_F32, lda, m, ab);
	if (a_f16) {
		ggml_fp32_to_fp16_row(a, af->data, (int64_t)ab * m * lda);
	} else {
		memcpy(af->data, a, asz);
	}
	struct ggml_tensor *bf = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, ldb, n, bb);
	memcpy(bf->data, b, bsz);
	struct ggml_tensor *av = ggml_view_3d(ctx, af, k, m, ab, af->nb[1], af->nb[2], 0);
	struct ggml_tensor *bv = ggml_view_3d(ctx, bf, k, n, bb, bf->nb[1], bf->nb[2], 0);
	return mul_mat_compute(ctx, ggml_mul_mat(ctx, av, bv), threads, c, csz, work);
}

int udgam_ggml_mul_mat_q(const char *type, const float *a, int m, int k, const float *b, int n, int threads,
                         float *deq, float *c, size_t *work) {
	enum ggml_type t = GGML_TYPE_COUNT;
	for (int i = 0; i < GGML_TYPE_COUNT; i++) {
		const char *name = ggml_type_name((enum ggml_type)i);
		if (name != NULL && strcmp(name, type) == 0) {
			t = (enum ggml_type)i;
		}
	}
	if (t == GGML_TYPE_COUNT || k % ggml_blck_size(t) != 0 || ggml_get_type_traits(t)->to_float == NULL) {
		return 1;
	}
	const size_t asz = ggml_row_size(t, k) * m, bsz = (size_t)n * k * 4, csz = (size_t)n * m * 4;
	struct ggml_init_params p = { asz + bsz + csz + 16 * ggml_tensor_overhead() + ggml_graph_overhead_custom(16, false) + 4096, NULL, false };
	ggml_cpu_init();
	struct ggml_context *ctx = ggml_init(p);
	if (ctx == NULL) {
		return 1;
	}
	struct ggml_tensor *at = ggml_new_tensor_2d(ctx, t, k, m);
	ggml_quantize_chunk(t, a, at->data, 0, m, k, NULL);
	ggml_get_type_traits(t)->to_float(at->data, deq, (int64_t)m * k);
	struct ggml_tensor *bt = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, n);
	memcpy(bt->data, b, bsz);
	return mul_mat_compute(ctx, ggml_mul_mat(ctx, at, bt), threads, c, csz, work);
}
