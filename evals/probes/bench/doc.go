// Package bench times Probe Suite scoring through llama.cpp: each prompt
// evaluated once with its choices as branches (shared prefix) against every
// choice scored as its own full sequence (naive). It holds the benchmarks
// and the item sample they score (CoreSample), which scripts/llamacpp's
// anchor scores too; it is kept apart so the probes package itself builds
// without cgo.
package bench
