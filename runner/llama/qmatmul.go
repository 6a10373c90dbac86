package llama

// #include <stdlib.h>
// #include "kernels.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// matMulQuantized quantizes a (m rows of k) to the ggml type typ ("q4_0",
// "q4_K", ...) and evaluates ggml's CPU product of it by b (n rows of k)
// in this binary on threads threads, for tests of scripts/engine/qgemm.c:
// the product (n rows of m), the weights as dequantized and the work
// buffer ggml's plan reserved.
func matMulQuantized(typ string, a []float32, m, k int, b []float32, n, threads int) (c, deq []float32, work int, err error) {
	if len(a) != m*k || len(b) != n*k {
		return nil, nil, 0, fmt.Errorf("matMulQuantized %s: %d and %d values do not fit %dx%d by %dx%d", typ, len(a), len(b), m, k, n, k)
	}
	c, deq = make([]float32, n*m), make([]float32, m*k)
	ctyp := C.CString(typ)
	defer C.free(unsafe.Pointer(ctyp))
	var w C.size_t
	if C.udgam_ggml_mul_mat_q(ctyp, (*C.float)(unsafe.Pointer(&a[0])), C.int(m), C.int(k), (*C.float)(unsafe.Pointer(&b[0])), C.int(n),
		C.int(threads), (*C.float)(unsafe.Pointer(&deq[0])), (*C.float)(unsafe.Pointer(&c[0])), &w) != 0 {
		return nil, nil, 0, fmt.Errorf("ggml could not evaluate the %s product of %dx%d by %dx%d", typ, m, k, n, k)
	}
	return c, deq, int(w), nil
}
