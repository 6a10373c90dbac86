package llama

/*
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "ggml-cpu.h"

// udgam_ggml_mul_mat evaluates ggml's CPU matrix product of a (ab batches
// of m rows of k values, lda apart; float16 when a_f16) and b (bb batches
// of n rows of k, ldb apart; bb a multiple of ab, ggml's broadcast) on
// threads threads, into c (bb batches of n rows of m). *work is the size
// of the work buffer ggml's plan reserved for it.
static int udgam_ggml_mul_mat(const float *a, bool a_f16, int m, int k, int lda, int ab,
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
	struct ggml_tensor *y = ggml_mul_mat(ctx, av, bv);
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
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// matShape is a matrix product as ggml lays it out: a holds batchA
// batches of m rows of k values (rows lda apart), b batchB batches of n
// rows of k (ldb apart), and the product c[batch][j][i] is the dot product
// of a's row i (batch batch/(batchB/batchA)) with b's row j.
type matShape struct {
	m, k, n, lda, ldb, batchA, batchB int
	aF16                              bool // a stored as float16 (the values given are rounded)
}

// matMul evaluates ggml's CPU matrix product in this binary on threads
// threads, for tests of the kernels scripts/engine.sh installs: the
// product, and the work buffer ggml's plan reserved for it.
func matMul(s matShape, a, b []float32, threads int) (c []float32, work int, err error) {
	if len(a) != s.batchA*s.m*s.lda || len(b) != s.batchB*s.n*s.ldb || s.batchB%s.batchA != 0 {
		return nil, 0, fmt.Errorf("matMul %+v: %d and %d values do not fit", s, len(a), len(b))
	}
	c = make([]float32, s.batchB*s.n*s.m)
	var w C.size_t
	if C.udgam_ggml_mul_mat((*C.float)(unsafe.Pointer(&a[0])), C.bool(s.aF16), C.int(s.m), C.int(s.k), C.int(s.lda), C.int(s.batchA),
		(*C.float)(unsafe.Pointer(&b[0])), C.int(s.n), C.int(s.ldb), C.int(s.batchB), C.int(threads),
		(*C.float)(unsafe.Pointer(&c[0])), &w) != 0 {
		return nil, 0, fmt.Errorf("ggml could not evaluate the matrix product %+v", s)
	}
	return c, int(w), nil
}
