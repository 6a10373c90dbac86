//go:build cgo

package main

import "github.com/udgamlabs/udgam-ci/runner/llama"

// The engine, llama.cpp through cgo (runner/llama). A build without cgo
// (engine_nocgo.go) has every command but those that score, so most of
// this package's tests build without compiling llama.cpp.

// haveEngine says this build scores.
const haveEngine = true

// loadEngine loads a GGUF into llama.cpp.
func loadEngine(path string, o engineOptions) (engineModel, error) {
	return llama.Load(path, llama.Options{Threads: o.Threads, Context: o.Context, Batch: o.Batch, Parallel: o.Parallel, CPUOnly: o.CPUOnly})
}

// engineUnusedCPU names the instruction sets this CPU has and the build
// leaves unused.
func engineUnusedCPU() []string {
	_, unused := llama.CPUFeatures()
	return unused
}
