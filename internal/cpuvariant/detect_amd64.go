package cpuvariant

import "golang.org/x/sys/cpu"

// Detect reads the running CPU's features (CPUID, and XGETBV for the
// register state the OS saves: golang.org/x/sys/cpu reports AVX and AVX-512
// only when the OS enables them).
func Detect() Features {
	x := cpu.X86
	f := Features{}
	for name, has := range map[string]bool{
		"CMPXCHG16B": x.HasCX16,
		"LAHF-SAHF":  x.HasLAHF,
		"POPCNT":     x.HasPOPCNT,
		"SSE3":       x.HasSSE3,
		"SSE4.1":     x.HasSSE41,
		"SSE4.2":     x.HasSSE42,
		"SSSE3":      x.HasSSSE3,
		"AVX":        x.HasAVX,
		"AVX2":       x.HasAVX2,
		"BMI1":       x.HasBMI1,
		"BMI2":       x.HasBMI2,
		"F16C":       x.HasF16C,
		"FMA":        x.HasFMA,
		"LZCNT":      x.HasLZCNT,
		"MOVBE":      x.HasMOVBE,
		"OSXSAVE":    x.HasOSXSAVE,
		"XSAVE":      x.HasXSAVE,
		"AVX-512F":   x.HasAVX512F,
		"AVX-512BW":  x.HasAVX512BW,
		"AVX-512CD":  x.HasAVX512CD,
		"AVX-512DQ":  x.HasAVX512DQ,
		"AVX-512VL":  x.HasAVX512VL,
		// Not in any level, but the engine's native builds use it.
		"AVX-512BF16": x.HasAVX512BF16,
	} {
		if has {
			f[name] = true
		}
	}
	return f
}
