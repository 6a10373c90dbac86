package llama

// #include "kernels.h"
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
