// Package bench times Probe Suite scoring through llama.cpp: each prompt
// evaluated once with its choices as branches (shared prefix) against every
// choice scored as its own full sequence (naive). It holds only benchmarks,
// kept apart so the probes package itself builds without cgo.
package bench
