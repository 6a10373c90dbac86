// What this build's compiler flags (the engine's, the same -march) give the
// CPU: the instruction sets they allow (cpu.go) and the FMA peak they can
// reach (peak.go).
#ifndef UDGAM_CPU_H
#define UDGAM_CPU_H

// udgam_cpu_compiled names the instruction sets this file was compiled for
// (the engine's flags) among those ggml's CPU kernels test, as
// internal/cpuvariant names them.
const char *udgam_cpu_compiled(void);

// udgam_fma_loop runs twelve independent fused multiply-add chains (enough
// to cover the FMA latency on every x86 core measured) of this build's
// widest float vector and returns the floating-point operations done. The
// result is stored in *sink so the loop stays.
double udgam_fma_loop(long iters, float seed, float *sink);

#endif
