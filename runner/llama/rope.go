package llama

// #include "kernels.h"
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
