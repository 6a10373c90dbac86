//go:build cgo

package llama

import "os"

// WithLogTo returns o writing its verbose log to f instead of stderr, so a
// test can read what one model logged.
func WithLogTo(o Options, f *os.File) Options {
	o.logTo = f
	return o
}

// WithGELUCheck returns o with check in place of ExactGELU, as Load
// consults it, so a test can see what a binary with ggml's float16 GELU
// table does without being one.
func WithGELUCheck(o Options, check func() error) Options {
	c := o.testChecks()
	c.gelu = check
	return o
}

// WithRopeCheck returns o with check in place of ExactRope, as Load
// consults it, so a test can see what a binary with ggml's float32 rope
// angles does without being one.
func WithRopeCheck(o Options, check func() error) Options {
	c := o.testChecks()
	c.rope = check
	return o
}

// WithCPUFeatures returns o with f in place of CPUFeatures, as Load
// consults it, so a test can see what a binary carried to an older CPU
// does.
func WithCPUFeatures(o Options, f func() (missing, unused []string)) Options {
	c := o.testChecks()
	c.cpu = f
	return o
}

// testChecks gives o checks of its own (a copy, so options copied before
// keep theirs) and returns them for the caller to fill.
func (o *Options) testChecks() *engineChecks {
	c := &engineChecks{}
	if o.checks != nil {
		*c = *o.checks
	}
	o.checks = c
	return c
}

// LogitRows returns the most rows of logits one decode of m may ask for,
// the most it has asked for so far, and the size of its logits buffer
// (-1 where the C library cannot say).
func LogitRows(m *Model) (limit, peak int, bufferBytes int64) {
	return m.outputRows(), m.peakRows, m.logitsBytes()
}

// WithGraphHead returns o keeping the output head in llama.cpp's graph,
// its logits read a part of a step at a time, so a test can compare that
// with the head outside it.
func WithGraphHead(o Options) Options {
	o.graphHead = true
	return o
}

// HeadOutside says whether m multiplies by its output head outside
// llama.cpp's graph, and how many bytes of logits that holds: every
// thread's panel and a pair's whole rows.
func HeadOutside(m *Model) (outside bool, heldBytes int64) {
	if m.head == nil {
		return false, 0
	}
	return true, m.head.heldBytes()
}

// HeadPanel is the vocabulary rows of one panel of the head.
const HeadPanel = headPanel

// VectorBuild says whether the engine has scripts/engine's x86 kernels
// (AVX2, FMA and F16C), which the head outside the graph needs.
func VectorBuild() bool { return vectorBuild() }
