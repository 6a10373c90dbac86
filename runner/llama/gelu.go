package llama

// #include "kernels.h"
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

// ggmlGELU runs ggml's CPU GELU and GEGLU (gate 1) ops on x, one thread.
func ggmlGELU(x []float32) (gelu, geglu []float32, err error) {
	n := len(x)
	gelu, geglu = make([]float32, n), make([]float32, n)
	if C.udgam_ggml_gelu((*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&gelu[0])),
		(*C.float)(unsafe.Pointer(&geglu[0])), C.int(n)) != 0 {
		return nil, nil, fmt.Errorf("ggml could not evaluate GELU on %d values", n)
	}
	return gelu, geglu, nil
}

func probeGELU() error {
	gelu, geglu, err := ggmlGELU(geluProbe)
	if err != nil {
		return err
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
