package llama_test

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// The GPU tests run where llama.GPUs finds a device (make cuda's lib/ollama
// in OLLAMA_LIBRARY_PATH: scripts/gpu-check.sh) and skip elsewhere, saying
// why. UDGAM_REQUIRE_GPU=1 turns the skip into a failure, so a GPU machine
// where the backend did not load cannot pass by skipping. Every other test
// of this package loads with the default options, so on such a machine it
// too runs with every layer on the GPU.

// needGPU returns the GPU devices or skips t with the reason there are none.
func needGPU(t *testing.T) []string {
	t.Helper()
	r := llama.GPUs()
	if len(r.Devices) > 0 {
		return r.Devices
	}
	why := r.Fallback
	if why == "" {
		why = "no GPU backend library in the search path (make cuda puts one in lib/ollama; OLLAMA_LIBRARY_PATH names another folder)"
	}
	if os.Getenv("UDGAM_REQUIRE_GPU") == "1" {
		t.Fatalf("UDGAM_REQUIRE_GPU=1, but %s", why)
	}
	t.Skipf("no GPU: %s", why)
	return nil
}

// TestGPUMatchesReferences scores the closed-form bigram and the tiny
// transformer with every layer on the GPU, with float32 and float16 caches,
// and holds them to the float64 references and to the same model on the
// CPU. The float32 bound is the CPU's own (1e-4 nats); the float16 cache
// rounds keys and values as the CPU's does, but cuBLAS may multiply them
// with float16 accumulation, so its bound is looser (not yet measured on a
// GPU: the log says what it was).
func TestGPUMatchesReferences(t *testing.T) {
	t.Parallel()
	devices := needGPU(t)
	t.Logf("GPU devices: %s", strings.Join(devices, ", "))
	bp, lp := fixtures(t)

	bg := llamatest.Load(t, bp, llama.Options{Threads: 1})
	reqs := llamatest.TextRequests(t, bg, 256, llamatest.Texts)
	res := llamatest.Score(t, bg, reqs)
	worst := 0.0
	for i, r := range reqs {
		seq := r.Branches[0].Tokens
		for k, p := range r.Branches[0].Positions {
			worst = math.Max(worst, math.Abs(res[i][0][k]-bigram.LogProb(seq[p-1], seq[p])))
		}
	}
	if worst > 1e-4 {
		t.Errorf("bigram on the GPU: %g nats from the closed form, want at most 1e-4", worst)
	}
	t.Logf("bigram on the GPU: %.3g nats from the closed form", worst)

	for _, c := range []struct {
		name  string
		kvF16 bool
		bound float64
	}{
		{"float32 cache", false, 1e-4},
		{"float16 cache", true, 2e-3},
	} {
		reqs := append(llamatest.TextRequests(t, bg, 256, llamatest.Texts), llamatest.ProbeLike(rand.New(rand.NewPCG(4, 2)), 20, 256)...)
		gpu := llamatest.Load(t, lp, llama.Options{Threads: 1, KVF16: c.kvF16})
		cpu := llamatest.Load(t, lp, llama.Options{Threads: 1, KVF16: c.kvF16, CPUOnly: true})
		want, err := tiny.Score(context.Background(), reqs)
		if err != nil {
			t.Fatal(err)
		}
		got := llamatest.Score(t, gpu, reqs)
		dRef := llamatest.MaxDiff(t, got, want)
		dCPU := llamatest.MaxDiff(t, got, llamatest.Score(t, cpu, reqs))
		t.Logf("transformer on the GPU, %s: %.3g nats from the float64 reference, %.3g from the CPU", c.name, dRef, dCPU)
		if dRef > c.bound || dCPU > c.bound {
			t.Errorf("transformer on the GPU, %s: %g nats from the reference and %g from the CPU, want at most %g", c.name, dRef, dCPU, c.bound)
		}
	}
}

// TestGPUsWithoutLibrary checks the report where no GPU library is in the
// search path: no devices, nothing to say.
func TestGPUsWithoutLibrary(t *testing.T) {
	t.Parallel()
	r := llama.GPUs()
	if len(r.Libraries) > 0 {
		t.Skipf("GPU libraries in the search path (%s): scripts/cuda/fallback.sh tests the report there", strings.Join(r.Libraries, ", "))
	}
	if len(r.Devices) > 0 || r.Fallback != "" {
		t.Fatalf("no GPU library, but the report is %+v", r)
	}
}
