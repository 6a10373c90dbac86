// Package ggufspec is the GGUF contract: what convert writes and runner
// reads back. It holds the engine's version (recorded in every conversion
// and run), how llama.cpp lays out an architecture's layers (the sliding-
// window periods it fixes, recurrent and hybrid families), and, in
// ggufspec/tokspec, the record of how text must be prepared. Both sides
// import it; it imports neither.
package ggufspec
