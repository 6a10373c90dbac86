// Package archtest is the exactness check every converted architecture
// passes: a tiny random Hugging Face checkpoint, written in each weight
// format, is converted as `udgam-ci model convert` converts it, scored
// through llama.cpp, and every token's log-probability on 2,048-token
// sequences is compared with a float64 forward pass written from the
// architecture's definition (a testmodel.Reference). Then the invariance
// checks of runner/llama/llamatest run on the converted file.
//
// It scores through the engine, so every file but this one needs cgo
// (`//go:build cgo`), as runner/llama's do.
package archtest
