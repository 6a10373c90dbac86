package llama

/*
#include <stdlib.h>
#include "llama.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/udgamlabs/udgam-ci/runner"
)

// ftypes maps runner.QuantTypes to llama.cpp's file types.
var ftypes = map[string]C.enum_llama_ftype{
	"q8_0":   C.LLAMA_FTYPE_MOSTLY_Q8_0,
	"q6_K":   C.LLAMA_FTYPE_MOSTLY_Q6_K,
	"q5_K_M": C.LLAMA_FTYPE_MOSTLY_Q5_K_M,
	"q4_1":   C.LLAMA_FTYPE_MOSTLY_Q4_1,
	"q4_K_M": C.LLAMA_FTYPE_MOSTLY_Q4_K_M,
	"q4_0":   C.LLAMA_FTYPE_MOSTLY_Q4_0,
}

// Quantize writes the GGUF at in, quantized to typ (one of
// runner.QuantTypes) by llama.cpp's own quantizer with its default rules
// (which tensors keep more bits, fallbacks for widths a type cannot hold),
// to out. The input is checked in Go first; threads <= 0 means all cores.
// An input already quantized is refused: see Requantize.
func Quantize(in, out, typ string, threads int) error {
	return quantize(in, out, typ, threads, false)
}

// Requantize is Quantize for an input whose tensors may already be
// quantized (a Q4_1 file to Q8_0, say): llama.cpp dequantizes each such
// tensor to float32 and quantizes it again (its allow_requantize), so the
// result carries both roundings. It makes a small, real change of a
// shipped file, such as a release's requantization, where no
// full-precision original is at hand; Quantize refuses, since a reference
// for an audit must not be rounded already.
func Requantize(in, out, typ string, threads int) error {
	return quantize(in, out, typ, threads, true)
}

func quantize(in, out, typ string, threads int, requant bool) error {
	name, err := runner.QuantType(typ)
	if err != nil {
		return err
	}
	ft, ok := ftypes[name]
	if !ok {
		return fmt.Errorf("internal: quantization type %s has no llama.cpp file type", name)
	}
	info, err := runner.ReadInfo(in)
	if err != nil {
		return err
	}
	if info.Quantized() && !requant {
		return fmt.Errorf("quantize %s to %s: its tensors are already quantized (%s), and quantizing them again would round them twice: give a full-precision (F32, F16 or BF16) file", in, name, info.Dtype)
	}
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	if err := checkCPU(CPUFeatures); err != nil {
		return fmt.Errorf("quantize %s: %w", in, err)
	}
	log := newEngineLog(false, nil)
	defer log.free()
	backendInit(log)
	p := C.llama_model_quantize_default_params()
	p.ftype = ft
	p.nthread = C.int32_t(threads)
	p.allow_requantize = C.bool(requant)
	// llama.cpp writes the file itself: it writes a temporary name that
	// becomes out only when whole.
	tmp := out + ".part"
	cin, ctmp := C.CString(in), C.CString(tmp)
	defer C.free(unsafe.Pointer(cin))
	defer C.free(unsafe.Pointer(ctmp))
	var rc C.uint32_t
	log.run(func() { rc = C.llama_model_quantize(cin, ctmp, &p) })
	if rc != 0 {
		os.Remove(tmp)
		return fmt.Errorf("quantize %s to %s: llama.cpp failed: %s", in, name, log.lastError("no message"))
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("quantize %s to %s: %w", in, name, err)
	}
	return nil
}
