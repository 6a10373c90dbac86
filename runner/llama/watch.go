package llama

/*
#include <stdlib.h>
#include "watch.h"
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
