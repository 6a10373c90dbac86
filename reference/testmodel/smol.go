package testmodel

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// SmolGGUF returns the path of a random-weight F16 model with SmolLM2-135M's
// shape, the one every benchmark uses. UDGAM_BENCH_GGUF names another file;
// otherwise it is written once (about 270 MB) into the OS temp directory and
// reused by later runs.
func SmolGGUF(getenv func(string) string) (string, error) {
	return smolGGUF(getenv("UDGAM_BENCH_GGUF"), "udgam-bench-smol135m-f16.gguf", WithF16())
}

// SmolF32GGUF is SmolGGUF's model with float32 weights (about 540 MB): the
// same shape, seed and tokenizer. ggml rounds activations to float16 to
// multiply float16 weights, and on the F16 model that moves a
// log-probability by up to ~1e-3 nats with the batch's shape alone; on this
// one two engines' values can be held to 1e-4. UDGAM_BENCH_GGUF_F32 names
// another file.
func SmolF32GGUF(getenv func(string) string) (string, error) {
	return smolGGUF(getenv("UDGAM_BENCH_GGUF_F32"), "udgam-bench-smol135m-f32-seed135.gguf")
}

func smolGGUF(named, file string, opts ...WriteOption) (string, error) {
	if named != "" {
		return named, nil
	}
	path := filepath.Join(os.TempDir(), file)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	m, err := RandomLlama(135, SmolShape())
	if err != nil {
		return "", err
	}
	// WriteLlamaGGUF writes through a temporary file, so a benchmark killed
	// while writing leaves no half model behind.
	if err := WriteLlamaGGUF(path, m, opts...); err != nil {
		return "", err
	}
	return path, nil
}

// SmolGGUFFor is SmolGGUF for benchmarks: it reads the process's
// environment and stops tb if the model cannot be written.
func SmolGGUFFor(tb testing.TB) string {
	tb.Helper()
	path, err := SmolGGUF(os.Getenv)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// BenchEnv reads a positive whole-number benchmark setting (such as
// UDGAM_BENCH_THREADS) from getenv, or returns def.
func BenchEnv(getenv func(string) string, name string, def int) int {
	if n, err := strconv.Atoi(getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
