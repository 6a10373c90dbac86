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
	if p := getenv("UDGAM_BENCH_GGUF"); p != "" {
		return p, nil
	}
	path := filepath.Join(os.TempDir(), "udgam-bench-smol135m-f16.gguf")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	m, err := RandomLlama(135, SmolShape())
	if err != nil {
		return "", err
	}
	// WriteLlamaGGUF writes through a temporary file, so a benchmark killed
	// while writing leaves no half model behind.
	if err := WriteLlamaGGUF(path, m, WithF16()); err != nil {
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
