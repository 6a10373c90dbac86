package llama

/*
#include "score.h"
*/
import "C"

import "unsafe"

// rowMax, sumExp and logSumExp call the log-softmax's C halves on a Go
// slice (tests; decode hands llama.cpp's rows to C directly).
func rowMax(x []float32) (max float32, finite bool) {
	bad := C.int(0)
	m := C.udgam_row_max((*C.float)(unsafe.Pointer(&x[0])), C.int(len(x)), &bad)
	return float32(m), bad == 0
}

func sumExp(x []float32, max float32) float64 {
	if len(x) == 0 {
		return float64(C.udgam_sum_exp(nil, 0, C.float(max)))
	}
	return float64(C.udgam_sum_exp((*C.float)(unsafe.Pointer(&x[0])), C.int(len(x)), C.float(max)))
}

func logSumExp(x []float32) float64 {
	return float64(C.udgam_logsumexp((*C.float)(unsafe.Pointer(&x[0])), C.int(len(x))))
}
