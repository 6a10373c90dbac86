//go:build cgo

package main

import (
	"fmt"
	"os"
	"sync"

	"github.com/udgamlabs/udgam-ci/runner/llama"
)

// The engine, llama.cpp through cgo (runner/llama). A build without cgo
// (engine_nocgo.go) has every command but those that score, so most of
// this package's tests build without compiling llama.cpp.

// haveEngine says this build scores.
const haveEngine = true

// loadEngine loads a GGUF into llama.cpp. Where a GPU backend is installed
// but gives no device (a CUDA build on a machine without a GPU or driver),
// the first load says so on stderr, once: the scores are the CPU build's.
func loadEngine(path string, o engineOptions) (engineModel, error) {
	m, err := llama.Load(path, llama.Options{Threads: o.Threads, Context: o.Context, Batch: o.Batch, Parallel: o.Parallel, CPUOnly: o.CPUOnly})
	if err == nil {
		noteGPUFallback(o.CPUOnly)
	}
	return m, err
}

var gpuNoteOnce sync.Once

// noteGPUFallback prints llama.GPUs' fallback sentence on stderr, once per
// process, unless the run asked for the CPU (--gpu cpu).
func noteGPUFallback(cpuOnly bool) {
	if cpuOnly {
		return
	}
	if note := llama.GPUs().Fallback; note != "" {
		gpuNoteOnce.Do(func() { fmt.Fprintf(os.Stderr, "warning: %s\n", note) })
	}
}

// engineUnusedCPU names the instruction sets this CPU has and the build
// leaves unused.
func engineUnusedCPU() []string {
	_, unused := llama.CPUFeatures()
	return unused
}

// engineGPUs names the GPU devices every layer goes to under --gpu auto
// (none where no GPU backend gives one).
func engineGPUs() []string { return llama.GPUs().Devices }
