package llama

/*
#include <stdbool.h>
#include <string.h>
#include "ggml.h"
#include "ggml-cpu.h"
#include "llama.h"

// udgam_ggml_gelu evaluates ggml's CPU GELU and GEGLU (with a gate of one)
// on n inputs, so Go can tell which kernel this binary was compiled with.
static int udgam_ggml_gelu(const float *x, float *gelu, float *geglu, int n) {
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

*/
import "C"

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/udgamlabs/udgam-ci/runner"
)

// geluProbe are inputs where float16 rounding moves GELU by far more than
// float32 does: each is off the float16 grid.
var geluProbe = []float32{-3.1416, -1.7321, -0.7071, -0.3333, 0.1234, 0.5773, 1.4142, 2.2361, 3.6055}

// GELUTolerance bounds |ggml - formula| on geluProbe for an exact kernel.
// The float16 table misses by ~1e-4 to 1e-3 there; float32 by ~1e-7.
const GELUTolerance = 1e-5

// ExactGELU reports whether ggml's CPU GELU kernels in this binary evaluate
// the formula (nil) or look it up in ggml's float16 tables (an error that
// says how to build). The Makefile builds ggml-cpu without the tables
// (scripts/engine.sh); a plain go build keeps them.
var ExactGELU = sync.OnceValue(probeGELU)

// buildExact says how to get the engine udgam-ci's exactness tests pass on.
const buildExact = `build with make (make build, or eval "$(make -s env)" before go build/test), which compiles ggml-cpu through scripts/engine.sh's copy`

func probeGELU() error {
	n := len(geluProbe)
	gelu, geglu := make([]float32, n), make([]float32, n)
	if C.udgam_ggml_gelu((*C.float)(unsafe.Pointer(&geluProbe[0])), (*C.float)(unsafe.Pointer(&gelu[0])),
		(*C.float)(unsafe.Pointer(&geglu[0])), C.int(n)) != 0 {
		return fmt.Errorf("ggml could not evaluate GELU on %d values", n)
	}
	for i, x := range geluProbe {
		want := runner.GELUTanh(float64(x))
		for _, got := range []struct {
			op string
			y  float32
		}{{"GELU", gelu[i]}, {"GEGLU", geglu[i]}} {
			if d := math.Abs(float64(got.y) - want); !(d <= GELUTolerance) {
				return fmt.Errorf("ggml's CPU %s(%g) = %.7g, the formula gives %.7g: this binary was built with ggml's float16 GELU table, "+
					"which moves GELU models' log-probabilities by up to ~3e-3 nats; "+buildExact, got.op, x, got.y, want)
			}
		}
	}
	return nil
}
