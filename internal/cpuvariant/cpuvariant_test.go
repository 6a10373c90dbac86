package cpuvariant_test

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/internal/cpuvariant"
)

// level returns the features an x86-64 level requires, from the table.
func level(t *testing.T, name string) []string {
	t.Helper()
	for _, v := range cpuvariant.Table("amd64") {
		if v.Name == name {
			return v.Requires
		}
	}
	t.Fatalf("no variant %s", name)
	return nil
}

func without(fs []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(fs), func(f string) bool { return slices.Contains(drop, f) })
}

func TestChoose(t *testing.T) {
	t.Parallel()
	v2, v3, v4 := level(t, "x86-64-v2"), level(t, "x86-64-v3"), level(t, "x86-64-v4")
	all := []string{"x86-64-v2", "x86-64-v3", "x86-64-v4"}
	tests := []struct {
		name      string
		arch      string
		cpu       []string
		installed []string
		force     string
		want      string
		better    []string
		err       []string // substrings of the error; nil for success
	}{
		{name: "v3 CPU, all installed", cpu: v3, installed: all, want: "x86-64-v3"},
		{name: "v4 CPU, all installed", cpu: v4, installed: all, want: "x86-64-v4"},
		{name: "v2 CPU, all installed", cpu: v2, installed: all, want: "x86-64-v2"},
		{name: "v4 CPU without v4 installed", cpu: v4, installed: all[:2], want: "x86-64-v3", better: []string{"x86-64-v4"}},
		{name: "v4 CPU with only the baseline", cpu: v4, installed: all[:1], want: "x86-64-v2", better: []string{"x86-64-v3", "x86-64-v4"}},
		{name: "v3 CPU with only the baseline", cpu: v3, installed: all[:1], want: "x86-64-v2", better: []string{"x86-64-v3"}},
		{name: "AVX2 without FMA stays on v2, nothing better", cpu: without(v3, "FMA"), installed: all, want: "x86-64-v2"},
		{name: "AVX-512F without VL stays on v3", cpu: without(v4, "AVX-512VL"), installed: all, want: "x86-64-v3"},
		{name: "installed names outside the table are ignored", cpu: v4, installed: []string{"native", "x86-64-v2"}, want: "x86-64-v2", better: []string{"x86-64-v3", "x86-64-v4"}},
		{name: "v2 CPU, only v3 and v4 installed", cpu: v2, installed: all[1:],
			err: []string{"no installed engine variant runs on this CPU", "x86-64-v3 needs AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE, OSXSAVE, XSAVE", "x86-64-v4 needs", "AVX-512VL", "make build"}},
		{name: "pre-v2 CPU", cpu: without(v2, "SSE4.2", "POPCNT"), installed: all[:1], err: []string{"x86-64-v2 needs POPCNT, SSE4.2"}},
		{name: "nothing installed", cpu: v4, err: []string{"no engine variant is installed", "x86-64-v2, x86-64-v3, x86-64-v4"}},
		{name: "forced below the best", cpu: v4, installed: all, force: "x86-64-v2", want: "x86-64-v2"},
		{name: "forced, better one missing: no warning", cpu: v4, installed: all[:2], force: "x86-64-v3", want: "x86-64-v3"},
		{name: "forced above the CPU", cpu: v3, installed: all, force: "x86-64-v4",
			err: []string{"UDGAM_CI_VARIANT=x86-64-v4", "this CPU lacks AVX-512F, AVX-512BW, AVX-512CD, AVX-512DQ, AVX-512VL"}},
		{name: "forced unknown", cpu: v4, installed: all, force: "x86-64-v9", err: []string{"UDGAM_CI_VARIANT=x86-64-v9: no such variant (known: x86-64-v2, x86-64-v3, x86-64-v4)"}},
		{name: "forced, not installed", cpu: v4, installed: all[:2], force: "x86-64-v4", err: []string{"UDGAM_CI_VARIANT=x86-64-v4: not installed (installed: x86-64-v2, x86-64-v3)"}},
		{name: "arm64 baseline", arch: "arm64", installed: []string{"armv8-a"}, want: "armv8-a"},
		{name: "no table", arch: "riscv64", installed: []string{"x86-64-v2"}, err: []string{"no CPU variants for this architecture"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arch := tt.arch
			if arch == "" {
				arch = "amd64"
			}
			c, err := cpuvariant.Choose(cpuvariant.Table(arch), cpuvariant.NewFeatures(tt.cpu...), tt.installed, tt.force)
			if tt.err != nil {
				if err == nil {
					t.Fatalf("chose %s, want an error", c.Variant.Name)
				}
				for _, w := range tt.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Variant.Name != tt.want || !reflect.DeepEqual(c.Better, tt.better) {
				t.Errorf("chose %s, better %v; want %s, better %v", c.Variant.Name, c.Better, tt.want, tt.better)
			}
			if w := c.Warning(); (w != "") != (len(tt.better) > 0) || (w != "" && !strings.Contains(w, tt.better[0])) {
				t.Errorf("warning %q with better %v", w, tt.better)
			}
		})
	}
}

func TestInstalled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{
		"udgam-ci-x86-64-v3": 0o755,
		"udgam-ci-x86-64-v2": 0o755,
		"udgam-ci-x86-64-v4": 0o644, // not executable
		"udgam-ci-":          0o755,
		"other-x86-64-v2":    0o755,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "udgam-ci-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := cpuvariant.Installed(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"x86-64-v2", "x86-64-v3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Installed = %v, want %v", got, want)
	}
	if _, err := cpuvariant.Installed(filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("missing dir: error %v does not name it", err)
	}
	if got, want := cpuvariant.Dir("/usr/local/bin/udgam-ci"), "/usr/local/libexec"; got != want {
		t.Errorf("Dir = %s, want %s", got, want)
	}
}

// gccMacro is the macro gcc defines when it may use each feature.
var gccMacro = map[string]string{
	"CMPXCHG16B": "__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16", "LAHF-SAHF": "__LAHF_SAHF__",
	"POPCNT": "__POPCNT__", "SSE3": "__SSE3__", "SSE4.1": "__SSE4_1__", "SSE4.2": "__SSE4_2__",
	"SSSE3": "__SSSE3__", "AVX": "__AVX__", "AVX2": "__AVX2__", "BMI1": "__BMI__", "BMI2": "__BMI2__",
	"F16C": "__F16C__", "FMA": "__FMA__", "LZCNT": "__LZCNT__", "MOVBE": "__MOVBE__", "XSAVE": "__XSAVE__",
	"AVX-512F": "__AVX512F__", "AVX-512BW": "__AVX512BW__", "AVX-512CD": "__AVX512CD__",
	"AVX-512DQ": "__AVX512DQ__", "AVX-512VL": "__AVX512VL__",
}

// The table's requirements are read off the compiler: every instruction
// set gcc may emit under -march=NAME (of those it names by macro) is
// required, and nothing else but OSXSAVE (the OS saving AVX state, which
// has no macro).
func TestRequiresMatchCompiler(t *testing.T) {
	t.Parallel()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	for _, v := range cpuvariant.Table("amd64") {
		out, err := exec.Command(cc, "-march="+v.Name, "-dM", "-E", "-x", "c", os.DevNull).Output()
		if err != nil {
			t.Fatalf("%s -march=%s: %v", cc, v.Name, err)
		}
		var want []string
		for feat, macro := range gccMacro {
			if strings.Contains(string(out), "#define "+macro+" ") {
				want = append(want, feat)
			}
		}
		if slices.Contains(want, "AVX") {
			want = append(want, "OSXSAVE")
		}
		got := slices.Clone(v.Requires)
		slices.Sort(got)
		slices.Sort(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s requires %v; gcc -march=%s enables %v", v.Name, got, v.Name, want)
		}
	}
}

// cpuinfoFlag is each feature's name in /proc/cpuinfo.
var cpuinfoFlag = map[string]string{
	"CMPXCHG16B": "cx16", "LAHF-SAHF": "lahf_lm", "POPCNT": "popcnt", "SSE3": "pni",
	"SSE4.1": "sse4_1", "SSE4.2": "sse4_2", "SSSE3": "ssse3", "AVX": "avx", "AVX2": "avx2",
	"BMI1": "bmi1", "BMI2": "bmi2", "F16C": "f16c", "FMA": "fma", "LZCNT": "abm", "MOVBE": "movbe",
	"XSAVE": "xsave", "AVX-512F": "avx512f", "AVX-512BW": "avx512bw", "AVX-512CD": "avx512cd",
	"AVX-512DQ": "avx512dq", "AVX-512VL": "avx512vl", "AVX-512BF16": "avx512_bf16",
}

// cpuinfoDisagreements compares Detect's features with a /proc/cpuinfo
// flags line. A flag the kernel lists must be detected: Detect must never
// under-report, or the launcher would refuse or slow a CPU that runs a
// level. The other way round is tolerated only under a hypervisor, whose
// CPUID and the guest kernel's list can differ (a Zen 5 VM sets LZCNT in
// CPUID while the kernel lists no abm); those come back as notes. On bare
// metal the two must agree both ways.
func cpuinfoDisagreements(flags []string, got cpuvariant.Features) (errs, notes []string) {
	vm := slices.Contains(flags, "hypervisor")
	for _, feat := range slices.Sorted(maps.Keys(cpuinfoFlag)) {
		flag := cpuinfoFlag[feat]
		want := slices.Contains(flags, flag)
		switch {
		case got[feat] == want:
		case want || !vm:
			errs = append(errs, fmt.Sprintf("Detect says %s=%v, /proc/cpuinfo says %s=%v", feat, got[feat], flag, want))
		default:
			notes = append(notes, fmt.Sprintf("%s: CPUID has it, the guest kernel lists no %s", feat, flag))
		}
	}
	return errs, notes
}

func TestCPUInfoDisagreements(t *testing.T) {
	t.Parallel()
	v3 := level(t, "x86-64-v3")
	features := func(names ...string) cpuvariant.Features {
		f := cpuvariant.Features{}
		for _, n := range names {
			f[n] = true
		}
		return f
	}
	flagsOf := func(feats []string, extra ...string) []string {
		var out []string
		for _, f := range feats {
			if fl, ok := cpuinfoFlag[f]; ok {
				out = append(out, fl)
			}
		}
		return append(out, extra...)
	}
	for _, tc := range []struct {
		name        string
		flags       []string
		got         cpuvariant.Features
		errs, notes int
	}{
		{"agree", flagsOf(v3), features(v3...), 0, 0},
		// The AMD EPYC (Zen 5) virtual machine.
		{"VM hides abm from the kernel", flagsOf(without(v3, "LZCNT"), "hypervisor"), features(v3...), 0, 1},
		{"bare metal without abm", flagsOf(without(v3, "LZCNT")), features(v3...), 1, 0},
		{"kernel lists what Detect misses, VM", flagsOf(v3, "hypervisor", "avx512f"), features(v3...), 1, 0},
		{"kernel lists what Detect misses, bare metal", flagsOf(v3), features(without(v3, "FMA")...), 1, 0},
	} {
		errs, notes := cpuinfoDisagreements(tc.flags, tc.got)
		if len(errs) != tc.errs || len(notes) != tc.notes {
			t.Errorf("%s: errors %q, notes %q; want %d and %d", tc.name, errs, notes, tc.errs, tc.notes)
		}
	}
}

// Detect agrees with the kernel's reading of the CPU, as far as a
// hypervisor lets the two agree (cpuinfoDisagreements).
func TestDetectMatchesCPUInfo(t *testing.T) {
	t.Parallel()
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" {
		t.Skip("reads /proc/cpuinfo's x86 flags")
	}
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	var flags []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "flags"); ok {
			_, list, _ := strings.Cut(rest, ":")
			flags = strings.Fields(list)
			break
		}
	}
	if len(flags) == 0 {
		t.Skip("no flags line in /proc/cpuinfo")
	}
	got := cpuvariant.Detect()
	errs, notes := cpuinfoDisagreements(flags, got)
	for _, e := range errs {
		t.Error(e)
	}
	for _, n := range notes {
		t.Logf("virtual machine: %s", n)
	}
	c, err := cpuvariant.Choose(cpuvariant.Table("amd64"), got, []string{"x86-64-v2", "x86-64-v3", "x86-64-v4"}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("this CPU runs %s", c.Variant.Name)
}

// The Makefile builds (make variants) exactly the table's variants.
func TestMakefileBuildsTheTable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for machine, goarch := range map[string]string{"x86_64": "amd64", "aarch64": "arm64"} {
		var got []string
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "VARIANTS_"+machine); ok {
				_, list, _ := strings.Cut(rest, ":=")
				got = strings.Fields(list)
			}
		}
		var want []string
		for _, v := range cpuvariant.Table(goarch) {
			want = append(want, v.Name)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Makefile VARIANTS_%s = %v, table for %s = %v", machine, got, goarch, want)
		}
	}
}
