package llama

/*
#include "head.h"
#include "score.h"
*/
import "C"

import (
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// headPanel is the vocabulary rows one panel of the head covers: a
// thread's panel of logits is headPanel by the step's read rows (4 MB at
// 512 rows). It is fixed, so a row's log-sum-exp adds the same panels in
// the same order whatever the batch, packing or threads.
const headPanel = 2048

// headMode guards the engine's process-wide switch (udgam_head_mode)
// while a context is created under it.
var headMode sync.Mutex

// head multiplies a step's hidden rows by a model's output head outside
// llama.cpp's graph (scripts/engine/patches/0013), a vocabulary panel per
// thread at a time, so that one decode serves a whole step, each weight of
// the head is dequantized once per step, and no rows x vocabulary matrix
// is held. Its logits are the graph's own bits (qgemm.c's udgam_head).
type head struct {
	w         *C.struct_ggml_tensor
	k, vocab  int
	threads   int
	hidden    []float32   // the step's hidden rows, one after another
	packed    []float32   // and packed for the kernel
	work      [][]float32 // a thread's work buffer
	panel     [][]float32 // a thread's panel of logits
	panelRows int         // rows each panel buffer holds
	full      []float32   // whole rows of logits, for a pair (logits)
}

// newHead returns the head ctx left out of its graph, nil where it kept it.
func newHead(ctx *C.struct_llama_context, vocab, threads int) (*head, error) {
	w := C.udgam_hidden_head(ctx)
	if w == nil {
		return nil, nil
	}
	h := &head{w: w, k: int(w.ne[0]), vocab: int(w.ne[1]), threads: max(1, threads)}
	if h.vocab != vocab {
		return nil, fmt.Errorf("internal: the output head has %d rows for %d tokens", h.vocab, vocab)
	}
	h.work = make([][]float32, h.threads)
	for t := range h.work {
		h.work[t] = alignedFloats(int(C.udgam_head_work_floats(h.w)))
	}
	h.panel = make([][]float32, h.threads)
	return h, nil
}

// floats is x's first element for C.
func floats(x []float32) *C.float { return (*C.float)(unsafe.Pointer(&x[0])) }

// alignedFloats returns n floats starting on a 64-byte boundary.
func alignedFloats(n int) []float32 {
	b := make([]float32, n+16)
	off := (64 - int(uintptr(unsafe.Pointer(&b[0]))%64)) % 64 / 4
	return b[off : off+n : off+n]
}

// pack copies the hidden rows (llama.cpp's, k floats each) and packs
// them for udgam_head.
func (h *head) pack(rows []*C.float) {
	n := len(rows)
	if cap(h.hidden) < n*h.k {
		h.hidden = make([]float32, n*h.k)
		h.packed = alignedFloats(int(C.udgam_head_pack_floats(C.int64_t(n), C.int64_t(h.k))))
	}
	h.hidden = h.hidden[:n*h.k]
	for j, r := range rows {
		copy(h.hidden[j*h.k:(j+1)*h.k], unsafe.Slice((*float32)(unsafe.Pointer(r)), h.k))
	}
	C.udgam_head_pack(floats(h.hidden), C.int64_t(n), C.int64_t(h.k), C.int64_t(h.k), floats(h.packed))
}

// panels is the number of vocabulary panels, and span panel p's rows.
func (h *head) panels() int { return (h.vocab + headPanel - 1) / headPanel }

func (h *head) span(p int) (v0, v1 int) { return p * headPanel, min(h.vocab, (p+1)*headPanel) }

// product writes the logits of vocabulary rows v0..v1-1 for the n packed
// rows to out, row j's at out[j*ldo], on thread t's work buffer.
func (h *head) product(t, n, v0, v1 int, out []float32, ldo int) {
	C.udgam_head(h.w, floats(h.packed), C.int64_t(n), C.int64_t(v0), C.int64_t(v1), floats(out),
		C.int64_t(ldo), floats(h.work[t]))
}

// scores returns, for each hidden row j, the log-sum-exp of its logits and
// the logits of the tokens next[j]: each thread takes whole panels, their
// maxima and sums of exponentials are kept per row and panel, and the
// panels are combined in order (NaN where a logit is not finite).
func (h *head) scores(rows []*C.float, next [][]int32) (lse []float64, logits [][]float32) {
	n := len(rows)
	if n == 0 {
		return nil, nil
	}
	h.pack(rows)
	np := h.panels()
	if h.panelRows < n {
		for t := range h.panel {
			h.panel[t] = make([]float32, headPanel*n)
		}
		h.panelRows = n
	}
	type read struct{ row, i, at int }
	byPanel := make([][]read, np)
	logits = make([][]float32, n)
	for j, ts := range next {
		logits[j] = make([]float32, len(ts))
		for i, tok := range ts {
			p := int(tok) / headPanel
			byPanel[p] = append(byPanel[p], read{j, i, int(tok) - p*headPanel})
		}
	}
	mx, sum := make([]float32, np*n), make([]float64, np*n)
	forEachWorker(np, h.threads, func(t, p int) {
		v0, v1 := h.span(p)
		buf := h.panel[t]
		h.product(t, n, v0, v1, buf, headPanel)
		C.udgam_panel_lse(floats(buf), C.int(n), C.int(v1-v0), C.int(headPanel), floats(mx[p*n:]), (*C.double)(unsafe.Pointer(&sum[p*n])))
		for _, r := range byPanel[p] {
			logits[r.row][r.i] = buf[r.row*headPanel+r.at]
		}
	})
	lse = make([]float64, n)
	for j := range n {
		lse[j] = combine(mx[j:], sum[j:], np, n)
	}
	return lse, logits
}

// combine is the log-sum-exp of a row from its panels' maxima and sums of
// exponentials (every stride-th of mx and sum, np of them), taken in panel
// order; NaN where a panel's sum is.
func combine(mx []float32, sum []float64, np, stride int) float64 {
	top := mx[0]
	for p := range np {
		if math.IsNaN(sum[p*stride]) {
			return math.NaN()
		}
		top = max(top, mx[p*stride])
	}
	s := 0.0
	for p := range np {
		s += sum[p*stride] * math.Exp(float64(mx[p*stride])-float64(top))
	}
	return float64(top) + math.Log(s)
}

// logits writes the hidden rows' whole rows of logits to out (len(rows)
// rows of vocab), for a pair's comparison of two distributions.
func (h *head) logits(rows []*C.float, out []float32) {
	if len(rows) == 0 {
		return
	}
	h.pack(rows)
	forEachWorker(h.panels(), h.threads, func(t, p int) {
		v0, v1 := h.span(p)
		h.product(t, len(rows), v0, v1, out[v0:], h.vocab)
	})
}

// heldBytes is what the head holds of logits: every thread's panel and
// a pair's whole rows.
func (h *head) heldBytes() int64 {
	return int64(len(h.panel))*int64(headPanel)*int64(h.panelRows)*4 + int64(len(h.full))*4
}

// panelLogSumExp is a row's log-sum-exp taken as scores takes it, a
// headPanel of the vocabulary at a time, and wholeLogSumExp the graph
// path's over the whole row (tests).
func panelLogSumExp(row []float32) float64 {
	np := (len(row) + headPanel - 1) / headPanel
	mx, sum := make([]float32, np), make([]float64, np)
	for p := range np {
		v0, v1 := p*headPanel, min(len(row), (p+1)*headPanel)
		C.udgam_panel_lse(floats(row[v0:]), 1, C.int(v1-v0), C.int(v1-v0), floats(mx[p:]), (*C.double)(unsafe.Pointer(&sum[p])))
	}
	return combine(mx, sum, np, 1)
}

func wholeLogSumExp(row []float32) float64 {
	return float64(C.udgam_logsumexp(floats(row), C.int(len(row))))
}
