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
