package llama

// #include "cpu.h"
import "C"

import (
	"fmt"
	"slices"
	"strings"

	"github.com/udgamlabs/udgam-ci/internal/cpuvariant"
)

// unusedSets are the sets worth naming when the CPU has them and the build
// leaves them out: each opens a wider kernel in ggml.
var unusedSets = []string{"AVX2", "AVX-512F"}

// CPUFeatures says which instruction sets this binary's engine was compiled
// for that the running CPU lacks, and which the CPU has that the build
// leaves unused. A binary (or a Go build cache) carried to another machine
// can miss some: ggml would then die of SIGILL mid-run, so Load refuses
// first. That holds where the compiler kept the missing sets to ggml's
// kernels; an AVX-512 build dies in llama.cpp's static initializers before
// main, which only the launcher (internal/cpuvariant) prevents. Unused
// ones mean a portable build on a newer CPU: exact, slower.
func CPUFeatures() (missing, unused []string) {
	built := compiledFor()
	cpu := cpuvariant.Detect()
	for _, set := range built {
		if !cpu[set] {
			missing = append(missing, set)
		}
	}
	for _, set := range unusedSets {
		if cpu[set] && !slices.Contains(built, set) {
			unused = append(unused, set)
		}
	}
	return missing, unused
}

// compiledFor names the instruction sets ggml-cpu was compiled for.
func compiledFor() []string { return strings.Fields(C.GoString(C.udgam_cpu_compiled())) }

// vectorBuild says whether the engine is compiled for x86 with AVX2, FMA
// and F16C (the x86-64-v3 and v4 variants, native builds on Haswell, Zen
// and later): scripts/engine/gemm.c and attn.c have kernels for those.
func vectorBuild() bool {
	built := compiledFor()
	return slices.Contains(built, "AVX2") && slices.Contains(built, "FMA") && slices.Contains(built, "F16C")
}

// checkCPU refuses to start the engine on a CPU without the instructions
// it was compiled for; features is CPUFeatures outside tests.
func checkCPU(features func() (missing, unused []string)) error {
	missing, _ := features()
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("this udgam-ci was compiled for %s, which this CPU lacks (the binary or its Go build cache came from another machine): rebuild it here with make build, or use a portable build (make variants, which installs a launcher that picks the build this CPU runs)", strings.Join(missing, ", "))
}
