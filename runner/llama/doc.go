// Package llama is udgam-ci's binding to llama.cpp's C API, compiled from
// the ollama module's vendored sources. All cgo lives here; the planning of
// batches and every check of the input happen in plain Go (package runner)
// before anything reaches C. The C helpers are the .c and .h files beside
// the Go.
//
// Every file but this one needs cgo: built without it (CGO_ENABLED=0) the
// package is empty, so `go vet ./...` and `go test ./...` still build the
// module, and what uses the engine is tagged `//go:build cgo` as well
// (internal/structure checks it).
package llama
