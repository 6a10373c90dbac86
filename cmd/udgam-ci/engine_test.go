package main

import (
	"strings"
	"testing"
)

// needEngine skips a test that scores in a build without the engine
// (CGO_ENABLED=0 go test ./cmd/udgam-ci: every other command's tests run
// without compiling llama.cpp). make test builds with it, so nothing is
// skipped there.
func needEngine(t *testing.T) {
	t.Helper()
	if !haveEngine {
		t.Skip("built without cgo: no engine")
	}
}

// Without the engine a scoring command fails with a clear error, not a
// panic; with it, the version names the engine.
func TestEngineSeam(t *testing.T) {
	t.Parallel()
	_, err := loadEngine("missing.gguf", engineOptions{Threads: 1})
	if err == nil {
		t.Fatal("loadEngine of a missing file succeeded")
	}
	if !haveEngine && !strings.Contains(err.Error(), "built without cgo") {
		t.Errorf("loadEngine without the engine: %v, want it to say so", err)
	}
}
