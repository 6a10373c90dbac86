package llama

/*
#include <stdint.h>
#include <string.h>
#include "ggml.h"
#include "ggml-cpu.h"

// udgam_ggml_rope turns one head x of dim values by ggml's CPU NEOX rope
// (base freq_base, no scaling) at each of n positions, into out (n * dim).
static int udgam_ggml_rope(const float *x, int dim, const int32_t *pos, int n, float freq_base, float *out) {
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
*/
import "C"

import (
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// RopeTolerance bounds |ggml - exact| on ropeProbe (a head of values in
// [-1, 1]) for a kernel whose angles are exact: float32 results are within
// ~3e-7. Stock ggml's float32 angles miss by ~1e-3 at position 32,767
// (about the position times 6e-8 radians).
const RopeTolerance = 1e-5

var ropeProbe = struct {
	dim   int
	pos   []int32
	bases []float32
}{256, []int32{1, 2047, 8191, 32767}, []float32{1e4, 1e6}}

// ExactRope reports whether ggml's CPU rope in this binary turns vectors
// by their exact angles, position times base^(-2i/dim) (nil), or by the
// float32 angles of stock ggml (an error that says how to build). The
// Makefile builds ggml-cpu with the angles in double (scripts/engine.sh);
// a plain go build keeps ggml's.
var ExactRope = sync.OnceValue(probeRope)

func probeRope() error {
	dim, pos := ropeProbe.dim, ropeProbe.pos
	x := make([]float32, dim)
	for i := range x {
		x[i] = float32(math.Sin(float64(3*i + 1)))
	}
	out := make([]float32, len(pos)*dim)
	for _, base := range ropeProbe.bases {
		if C.udgam_ggml_rope((*C.float)(unsafe.Pointer(&x[0])), C.int(dim), (*C.int32_t)(unsafe.Pointer(&pos[0])), C.int(len(pos)),
			C.float(base), (*C.float)(unsafe.Pointer(&out[0]))) != 0 {
			return fmt.Errorf("ggml could not evaluate rope on %d positions", len(pos))
		}
		half := dim / 2
		for k, p := range pos {
			got := out[k*dim : (k+1)*dim]
			for i := range half {
				theta := float64(p) * math.Pow(float64(base), -float64(2*i)/float64(dim))
				sin, cos := math.Sincos(theta)
				a, b := float64(x[i]), float64(x[i+half])
				for _, w := range []struct {
					j    int
					want float64
				}{{i, a*cos - b*sin}, {i + half, b*cos + a*sin}} {
					if d := math.Abs(float64(got[w.j]) - w.want); !(d <= RopeTolerance) {
						return fmt.Errorf("ggml's CPU rope (base %g) at position %d gives dimension %d %.7g, the exact angle %.7g: "+
							"this binary takes rope's angles in float32, which moves long sequences' log-probabilities by up to ~1e-4 nats; "+buildExact,
							base, p, w.j, got[w.j], w.want)
					}
				}
			}
		}
	}
	return nil
}
