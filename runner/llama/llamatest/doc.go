// Package llamatest holds the checks every model llama.cpp scores must
// pass, callable for any GGUF: agreement with a reference scorer, and the
// invariance of log-probabilities under threads, batch size, packing,
// cache layout and prefix sharing. runner/llama's own tests and each
// architecture's exactness test (convert/archtest) call them.
//
// Its checks load models into the engine, so every file but this one
// needs cgo (`//go:build cgo`), as runner/llama's do.
package llamatest
