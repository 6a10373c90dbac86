package llama

/*
#include <stdlib.h>
#include "log.h"
*/
import "C"

import (
	"os"
	"runtime"
	"strings"
	"unsafe"
)

// engineLog is one owner's share of llama.cpp's log: a model's, a
// quantization's. llama.cpp's log callback is one per process, so the C
// side (log.c) hands each line to the sink of the call running on the
// thread that logs it; run makes this one that sink. Each call's errors are
// its own, and a verbose model's lines never come from, or go to, another.
type engineLog struct {
	c *C.struct_udgam_log
	// to, when not nil, is where a verbose log goes instead of stderr; held
	// here so its descriptor stays open while C writes to it.
	to *os.File
}

// newEngineLog returns a sink that keeps each call's warnings and errors
// and, when verbose, writes every line to to (nil: stderr). Free it.
func newEngineLog(verbose bool, to *os.File) *engineLog {
	fd := -1
	if verbose {
		fd = 2
		if to != nil {
			fd = int(to.Fd())
		}
	}
	// C.malloc never returns nil: out of memory, it crashes as Go would.
	l := &engineLog{c: (*C.struct_udgam_log)(C.malloc(C.sizeof_struct_udgam_log)), to: to}
	C.udgam_log_reset(l.c, C.int(fd))
	return l
}

// run calls f with llama.cpp's log on this goroutine's thread going to l,
// starting from no text. f's C calls must run on the goroutine itself.
func (l *engineLog) run(f func()) {
	if l == nil || l.c == nil { // freed: a closed model's Close
		f()
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev := C.udgam_log_begin(l.c)
	defer C.udgam_log_end(prev)
	f()
}

// lastError is the engine's warnings and errors from the last run, on one
// line, or fallback where it gave none.
func (l *engineLog) lastError(fallback string) string {
	return oneLine(C.GoString(&l.c.err[0]), fallback)
}

// gpuError is what a GPU backend library logged as a warning or error in
// the last run (gpu.go).
func (l *engineLog) gpuError() string { return strings.TrimSpace(C.GoString(&l.c.gpu[0])) }

func (l *engineLog) free() {
	if l != nil && l.c != nil {
		C.free(unsafe.Pointer(l.c))
		l.c = nil
	}
}

// oneLine joins the lines of a log into one, or returns fallback for none.
func oneLine(s, fallback string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return fallback
	}
	return strings.Join(strings.Fields(s), " ")
}
