//go:build cgo

#include <stdlib.h>
#include "ggml.h"
#include "watch.h"

// udgam_watch_ops is an eval callback that marks in seen each wanted kind
// of node a graph computes: GELU kernels that ggml's float16 tables serve,
// and rope. It never asks for a node's data, so the graph is computed as
// without it.
static bool udgam_watch_ops(struct ggml_tensor *t, bool ask, void *data) {
	struct udgam_watch *w = data;
	if (!ask) {
		return false;
	}
	if (t->op == GGML_OP_UNARY) {
		enum ggml_unary_op u = ggml_get_unary_op(t);
		if (u == GGML_UNARY_OP_GELU || u == GGML_UNARY_OP_GELU_QUICK) {
			w->seen |= w->want & UDGAM_WATCH_GELU;
		}
	} else if (t->op == GGML_OP_GLU) {
		enum ggml_glu_op g = ggml_get_glu_op(t);
		if (g == GGML_GLU_OP_GEGLU || g == GGML_GLU_OP_GEGLU_QUICK) {
			w->seen |= w->want & UDGAM_WATCH_GELU;
		}
	} else if (t->op == GGML_OP_ROPE) {
		w->seen |= w->want & UDGAM_WATCH_ROPE;
	}
	return false;
}

struct udgam_watch *udgam_watch_new(struct llama_context_params *p, int want) {
	struct udgam_watch *w = calloc(1, sizeof *w);
	if (w == NULL) {
		return NULL;
	}
	w->want = want;
	p->cb_eval = udgam_watch_ops;
	p->cb_eval_user_data = w;
	return w;
}
