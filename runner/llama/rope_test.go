package llama_test

import (
	"testing"

	"github.com/udgamlabs/udgam-ci/runner/llama"
)

// The test binary is built as make builds: ggml's rope turns by the exact
// angles. Built without the Makefile's workspace it fails, saying how.
func TestExactRope(t *testing.T) {
	if err := llama.ExactRope(); err != nil {
		t.Fatal(err)
	}
}
