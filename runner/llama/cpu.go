package llama

/*
#include <string.h>

static void udgam_note(char *buf, int n, const char *name) {
	if (buf[0] != 0) {
		strncat(buf, " ", n - strlen(buf) - 1);
	}
	strncat(buf, name, n - strlen(buf) - 1);
}

// udgam_cpu_check compares the instruction sets this file was compiled
// for (the engine's flags) with the running CPU: missing gets those the CPU
// lacks, unused those it has that the build leaves out.
static void udgam_cpu_check(char *missing, char *unused, int n) {
	missing[0] = 0;
	unused[0] = 0;
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
#ifdef __AVX__
	if (!__builtin_cpu_supports("avx")) udgam_note(missing, n, "AVX");
#endif
#ifdef __AVX2__
	if (!__builtin_cpu_supports("avx2")) udgam_note(missing, n, "AVX2");
#else
	if (__builtin_cpu_supports("avx2")) udgam_note(unused, n, "AVX2");
#endif
#ifdef __FMA__
	if (!__builtin_cpu_supports("fma")) udgam_note(missing, n, "FMA");
#endif
#ifdef __F16C__
	if (!__builtin_cpu_supports("f16c")) udgam_note(missing, n, "F16C");
#endif
#ifdef __BMI2__
	if (!__builtin_cpu_supports("bmi2")) udgam_note(missing, n, "BMI2");
#endif
#ifdef __AVX512F__
	if (!__builtin_cpu_supports("avx512f")) udgam_note(missing, n, "AVX-512F");
#else
	if (__builtin_cpu_supports("avx512f")) udgam_note(unused, n, "AVX-512F");
#endif
#ifdef __AVX512BW__
	if (!__builtin_cpu_supports("avx512bw")) udgam_note(missing, n, "AVX-512BW");
#endif
#ifdef __AVX512VL__
	if (!__builtin_cpu_supports("avx512vl")) udgam_note(missing, n, "AVX-512VL");
#endif
#ifdef __AVX512BF16__
	if (!__builtin_cpu_supports("avx512bf16")) udgam_note(missing, n, "AVX-512BF16");
#endif
#endif
}
*/
import "C"

import (
	"fmt"
	"strings"
)

// CPUFeatures says which instruction sets this binary's engine was compiled
// for that the running CPU lacks, and which the CPU has that the build
// leaves unused. A binary (or a Go build cache) carried to another machine
// can miss some: ggml would then die of SIGILL mid-run, so Load refuses
// first. That holds where the compiler kept the missing sets to ggml's
// kernels; an AVX-512 build dies in llama.cpp's static initializers before
// main, which only the launcher (internal/cpuvariant) prevents. Unused
// ones mean a portable build on a newer CPU: exact, slower.
func CPUFeatures() (missing, unused []string) {
	var m, u [256]C.char
	C.udgam_cpu_check(&m[0], &u[0], C.int(len(m)))
	return strings.Fields(C.GoString(&m[0])), strings.Fields(C.GoString(&u[0]))
}

// cpuFeatures is CPUFeatures; tests replace it to exercise the refusal.
var cpuFeatures = CPUFeatures

// checkCPU refuses to start the engine on a CPU without the instructions
// it was compiled for.
func checkCPU() error {
	missing, _ := cpuFeatures()
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("this udgam-ci was compiled for %s, which this CPU lacks (the binary or its Go build cache came from another machine): rebuild it here with make build, or use a portable build (make variants, which installs a launcher that picks the build this CPU runs)", strings.Join(missing, ", "))
}
