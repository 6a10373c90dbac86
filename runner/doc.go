// Package runner is what scoring needs of a model, in plain Go: the Model
// and Scorer interfaces, requests whose branches share a prefix, planning
// them into decode steps, reading and checking a GGUF file before llama.cpp
// loads it (a llama.cpp assertion would abort the process), and the
// engine's version. The cgo binding that implements it is runner/llama.
package runner
