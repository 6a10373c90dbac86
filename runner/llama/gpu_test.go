//go:build cgo

package llama_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/internal/testexec"
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

// TestGPUFallbackReport is the CUDA build on a machine without a GPU, with
// stand-in libraries (testdata/fakegpu: a backend that loads, logs
// ggml_cuda_init's error through its own libggml-base.so and gives no
// device), and a backend that cannot be loaded. Each runs in a child
// process of this test binary, since ggml loads backends once per process:
// the report must have no devices and say which library and why, and the
// backend's own log must not reach stderr (udgam-ci prints the one line).
func TestGPUFallbackReport(t *testing.T) {
	t.Parallel()
	if os.Getenv("UDGAM_GPU_REPORT_CHILD") == "1" {
		if err := json.NewEncoder(os.Stdout).Encode(llama.GPUs()); err != nil {
			t.Fatal(err)
		}
		return
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	// Laid out as make cuda leaves lib/ollama: libggml-base.so is a link to
	// the file its soname names, which the backend finds by its RUNPATH.
	build := func(t *testing.T, dir string) {
		if err := os.Symlink("libggml-base.so.0", filepath.Join(dir, "libggml-base.so")); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"-shared", "-fPIC", "-Wl,-soname,libggml-base.so.0", "-o", filepath.Join(dir, "libggml-base.so.0"), "testdata/fakegpu/base.c"},
			{"-shared", "-fPIC", "-o", filepath.Join(dir, "libggml-cuda.so"), "testdata/fakegpu/cuda.c", "-L" + dir, "-l:libggml-base.so", "-Wl,-rpath,$ORIGIN"},
		} {
			if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
				t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
			}
		}
	}
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string // after the library's path
	}{
		{"loads, no device", build, " found no GPU (no CUDA-capable device is detected); scoring on the CPU, with the CPU build's results"},
		{"cannot be loaded", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "libggml-cuda.so"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, " could not be loaded (file too short); scoring on the CPU, with the CPU build's results"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "lib", "ollama") // ggml loads only from folders so named
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			c.setup(t, dir)
			cmd := testexec.Self("-test.run=^TestGPUFallbackReport$")
			cmd.Env = append(os.Environ(), "UDGAM_GPU_REPORT_CHILD=1", "OLLAMA_LIBRARY_PATH="+dir)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("child: %v\n%s%s", err, stdout.String(), stderr.String())
			}
			var r llama.GPUReport
			line, _, _ := strings.Cut(stdout.String(), "\n")
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("child's report %q: %v", stdout.String(), err)
			}
			lib := filepath.Join(dir, "libggml-cuda.so")
			if len(r.Devices) != 0 || r.Fallback != lib+c.want || len(r.Libraries) != 1 || r.Libraries[0] != lib {
				t.Errorf("report %+v,\nwant no devices, library %s and fallback %q", r, lib, lib+c.want)
			}
			if strings.Contains(stderr.String(), "ggml_cuda_init") {
				t.Errorf("the backend's own log reached stderr: %s", stderr.String())
			}
		})
	}
}
