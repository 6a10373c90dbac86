//go:build cgo

package llama_test

import (
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runner/llama"
)

// The test binary is built as make builds it, for this machine, so the CPU
// has every instruction set it was compiled for.
func TestCPUFeaturesOfThisBuild(t *testing.T) {
	t.Parallel()
	missing, unused := llama.CPUFeatures()
	if len(missing) > 0 {
		t.Fatalf("built for %v, which this CPU lacks", missing)
	}
	t.Logf("instruction sets this CPU has and the build leaves unused: %v", unused)
}

func TestLoadRefusesMissingCPUFeatures(t *testing.T) {
	t.Parallel()
	_, tinyLlama := fixtures(t)
	opts := llama.WithCPUFeatures(llama.Options{Threads: 1, Context: 64, Parallel: 1}, func() ([]string, []string) { return []string{"AVX-512F", "AVX-512BW"}, nil })
	m, err := llama.Load(tinyLlama, opts)
	if err == nil {
		m.Close()
		t.Fatal("Load on a CPU without the build's instruction sets succeeded")
	}
	for _, want := range []string{tinyLlama, "AVX-512F, AVX-512BW", "make build"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
