package llama

/*
// Float16 arithmetic on arm64 makes ggml sum float16 products in float16
// (its dot products, tinyBLAS, the SVE paths), where x86 and arm64's
// baseline sum them in float32: the Makefile compiles arm64 with +nofp16
// (issue 38). macOS builds with Accelerate, its own path (unverified).
#if defined(__aarch64__) && !defined(__APPLE__) && (defined(__ARM_FEATURE_FP16_VECTOR_ARITHMETIC) || defined(__ARM_FEATURE_SVE))
#error "udgam-ci: arm64 compiled with float16 arithmetic (or SVE): ggml would sum float16 products in float16; build with make, whose flags add +nofp16"
#endif

// udgam_cpu_compiled names the instruction sets this file was compiled for
// (the engine's flags) among those ggml's CPU kernels test, as
// internal/cpuvariant names them.
static const char *udgam_cpu_compiled(void) {
	return ""
#if defined(__x86_64__)
#ifdef __AVX__
		" AVX"
#endif
#ifdef __AVX2__
		" AVX2"
#endif
#ifdef __FMA__
		" FMA"
#endif
#ifdef __F16C__
		" F16C"
#endif
#ifdef __BMI2__
		" BMI2"
#endif
#ifdef __AVX512F__
		" AVX-512F"
#endif
#ifdef __AVX512BW__
		" AVX-512BW"
#endif
#ifdef __AVX512VL__
		" AVX-512VL"
#endif
#ifdef __AVX512BF16__
		" AVX-512BF16"
#endif
#endif
		;
}
*/
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

// checkCPU refuses to start the engine on a CPU without the instructions
// it was compiled for; features is CPUFeatures outside tests.
func checkCPU(features func() (missing, unused []string)) error {
	missing, _ := features()
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("this udgam-ci was compiled for %s, which this CPU lacks (the binary or its Go build cache came from another machine): rebuild it here with make build, or use a portable build (make variants, which installs a launcher that picks the build this CPU runs)", strings.Join(missing, ", "))
}
