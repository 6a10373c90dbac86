//go:build cgo

package llama

import (
	"fmt"
	"os"
	"runtime"
)

// The defaults of Options: Load fills each of these fields left 0 with its
// default (and Threads with all cores, runtime.NumCPU).
const (
	// DefaultContext is the KV cache's cells, shared by all sequences.
	DefaultContext = 4096
	// DefaultBatch is the tokens fed to one decode.
	DefaultBatch = 512
	// DefaultParallel is the sequences decoded together.
	DefaultParallel = 32
	// DefaultPackCells is the cache cells packed sequences may share: the
	// best packing budget measured (runner.Limits.PackCells, BENCHMARKS.md).
	DefaultPackCells = 256
)

// maxLogitBytes bounds the logits one decode asks llama.cpp for: it holds
// each row twice (the graph's output and the context's output buffer), and
// a 512-token step over Gemma 3's 262,144-token vocabulary would take 1 GB.
// Steps reading more rows are decoded in parts (parts); 64 MiB keeps Gemma
// 3 within weights + KV cache + 300 MB (BENCHMARKS.md, issue 53).
const maxLogitBytes = 64 << 20

// MaxParallel is the most sequences one context holds (llama.cpp's
// LLAMA_MAX_SEQ): Load refuses more.
const MaxParallel = 256

// Options configure a loaded model.
type Options struct {
	Threads   int // CPU threads; 0 means all cores
	Context   int // KV cache cells shared by all sequences; 0 means DefaultContext
	Batch     int // tokens per decode; 0 means DefaultBatch
	Parallel  int // sequences decoded together, at most MaxParallel; 0 means DefaultParallel
	PackCells int // cache cells packed sequences may share; 0 means DefaultPackCells
	// SeparateCaches gives each sequence a cache of its own of Context
	// cells, so packed sequences never attend over each other's cells; a
	// shared prompt is then copied into each branch.
	SeparateCaches bool
	CPUOnly        bool // keep every layer on the CPU even when a GPU backend is loaded
	// Attention chooses attention's kernel; the default fuses it where
	// this binary carries the tiled kernel (TiledAttention).
	Attention Attention
	KVF16     bool // float16 KV cache (llama.cpp's default) instead of float32
	// EachStart feeds every request's tokens even where others packed with
	// it begin alike (runner.Limits.ShareStarts off): the baseline the
	// probe benchmark measures sharing against.
	EachStart bool
	// Verbose passes llama.cpp's log through to stderr: the lines logged
	// during this model's own calls, never another model's (log.go).
	Verbose bool

	// logTo replaces stderr as where Verbose writes (tests only, through
	// export_test.go), so a test can read one model's log.
	logTo *os.File
	// graphHead keeps the output head in llama.cpp's graph, its logits
	// read a part of a step at a time, where it would be taken out (tests
	// only, through export_test.go, to compare the two).
	graphHead bool
	// checks replaces the engine's self-checks (tests only, through
	// export_test.go); nil uses ExactGELU, ExactRope and CPUFeatures.
	checks *engineChecks
}

// Attention is how a model's attention is computed.
type Attention int

const (
	// AttentionAuto is AttentionFlash where TiledAttention holds and the
	// layers stay on the CPU, else AttentionUnfused.
	AttentionAuto Attention = iota
	// AttentionFlash fuses attention into one ggml operation (llama.cpp's
	// flash attention): scripts/engine/attn.c's tiled kernel where it is
	// compiled in and takes the model's attention (float32 throughout,
	// masked tiles skipped: about 1.4x faster at a 2,048-token window,
	// BENCHMARKS.md, issue 31), otherwise ggml's own, slower on CPUs.
	AttentionFlash
	// AttentionUnfused writes every score and softmaxes them (ggml's
	// attention without flash attention).
	AttentionUnfused
)

// ParseAttention reads an Attention by name: "auto" (or ""), "flash" or
// "unfused".
func ParseAttention(name string) (Attention, error) {
	switch name {
	case "", "auto":
		return AttentionAuto, nil
	case "flash":
		return AttentionFlash, nil
	case "unfused":
		return AttentionUnfused, nil
	}
	return 0, fmt.Errorf("attention %q: want auto, flash or unfused", name)
}

// withDefaults is o with every field left 0 set to its default: the one
// place the defaults are applied.
func (o Options) withDefaults() Options {
	for _, f := range []struct {
		v   *int
		def int
	}{
		{&o.Threads, runtime.NumCPU()},
		{&o.Context, DefaultContext},
		{&o.Batch, DefaultBatch},
		{&o.Parallel, DefaultParallel},
		{&o.PackCells, DefaultPackCells},
	} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	return o
}
