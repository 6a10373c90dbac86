package llama

/*
#include <stdbool.h>
#include <stdlib.h>
#include "ggml.h"
#include "llama.h"

enum { UDGAM_WATCH_GELU = 1, UDGAM_WATCH_ROPE = 2 };

// udgam_watch: which inexact kernels to look for, and which a graph used.
struct udgam_watch {
	int want;
	int seen;
};

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

static struct udgam_watch *udgam_watch_new(struct llama_context_params *p, int want) {
	struct udgam_watch *w = calloc(1, sizeof *w);
	if (w == NULL) {
		return NULL;
	}
	w->want = want;
	p->cb_eval = udgam_watch_ops;
	p->cb_eval_user_data = w;
	return w;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// inexact holds why this binary's GELU or rope kernels are not exact
// (ExactGELU, ExactRope), and watches each context's graphs for them: a
// model is refused at its first decode only where its graph applies one,
// so a SiLU model still scores with the GELU table and GPT-2 or Mamba
// with ggml's float32 rope angles.
type inexact struct {
	gelu, rope error
	w          *C.struct_udgam_watch
}

// watch installs the watch on cp when either kernel is inexact.
func (x *inexact) watch(cp *C.struct_llama_context_params) error {
	var want C.int
	if x.gelu != nil {
		want |= C.UDGAM_WATCH_GELU
	}
	if x.rope != nil {
		want |= C.UDGAM_WATCH_ROPE
	}
	if want == 0 {
		return nil
	}
	if x.w = C.udgam_watch_new(cp, want); x.w == nil {
		return errors.New("allocate the kernel watch")
	}
	return nil
}

// check says why the graphs decoded so far cannot be scored exactly.
func (x *inexact) check(path, arch string) error {
	if x.w == nil {
		return nil
	}
	switch {
	case x.w.seen&C.UDGAM_WATCH_GELU != 0:
		return fmt.Errorf("model %s (architecture %s) applies GELU: %w", path, arch, x.gelu)
	case x.w.seen&C.UDGAM_WATCH_ROPE != 0:
		return fmt.Errorf("model %s (architecture %s) applies rope: %w", path, arch, x.rope)
	}
	return nil
}

func (x *inexact) free() {
	if x.w != nil {
		C.free(unsafe.Pointer(x.w))
		x.w = nil
	}
}
