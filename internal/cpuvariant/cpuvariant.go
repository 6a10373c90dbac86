// Package cpuvariant chooses which build of udgam-ci to run on this CPU.
//
// A binary that travels (the Docker image, a release) carries the engine
// compiled several times, once per x86-64 micro-architecture level, each
// with fixed compiler flags (make variants). The launcher (cmd/udgam-ci-
// launcher, installed as udgam-ci) reads the CPU's features in plain Go and
// execs the best installed build this CPU runs. This package holds the
// levels, the choice and the install layout; it has no cgo, so the launcher
// runs on any CPU of its architecture.
package cpuvariant

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// ForceEnv names the environment variable that forces one variant by name.
const ForceEnv = "UDGAM_CI_VARIANT"

// Prefix starts every variant's file name: libexec/udgam-ci-x86-64-v3.
const Prefix = "udgam-ci-"

// Variant is one build of the engine. Its name is also the -march value
// the Makefile compiles it with (make variants), so the flags and the name
// cannot drift apart.
type Variant struct {
	Name string
	// Requires are the CPU features the compiler may use under that
	// -march, as Detect names them.
	Requires []string
}

// The x86-64 levels of the psABI, as gcc and clang define -march=x86-64-vN
// (gcc 11, clang 12). v3 adds AVX2, FMA and F16C, the sets ggml's vector
// code tests most (its "haswell" CPU variant); v4 adds AVX-512F/BW/CD/DQ/VL
// (its "skylakex"). ggml's paths for AVX-512 BF16/VNNI and AMX are not in
// any level: a native build (make build) compiles them where the CPU has
// them.
var (
	x86v2 = []string{"CMPXCHG16B", "LAHF-SAHF", "POPCNT", "SSE3", "SSE4.1", "SSE4.2", "SSSE3"}
	x86v3 = append(slices.Clone(x86v2), "AVX", "AVX2", "BMI1", "BMI2", "F16C", "FMA", "LZCNT", "MOVBE", "OSXSAVE", "XSAVE")
	x86v4 = append(slices.Clone(x86v3), "AVX-512F", "AVX-512BW", "AVX-512CD", "AVX-512DQ", "AVX-512VL")
)

// tables lists each architecture's variants from the baseline up.
var tables = map[string][]Variant{
	"amd64": {
		{Name: "x86-64-v2", Requires: x86v2},
		{Name: "x86-64-v3", Requires: x86v3},
		{Name: "x86-64-v4", Requires: x86v4},
	},
	// One baseline build for arm64: ggml's optional arm64 sets (dotprod,
	// fp16 arithmetic, SVE) are left to native builds.
	"arm64": {
		{Name: "armv8-a"},
	},
}

// Table is the variants for a Go architecture (runtime.GOARCH), baseline
// first; nil where there are none.
func Table(goarch string) []Variant {
	return tables[goarch]
}

// Features is the set of CPU features a processor has.
type Features map[string]bool

// NewFeatures makes a set from names.
func NewFeatures(names ...string) Features {
	f := make(Features, len(names))
	for _, n := range names {
		f[n] = true
	}
	return f
}

// Missing lists the features v needs that f lacks, in v's order.
func (v Variant) Missing(f Features) []string {
	var out []string
	for _, r := range v.Requires {
		if !f[r] {
			out = append(out, r)
		}
	}
	return out
}

// Choice is the variant to run and what the install lacks for this CPU.
type Choice struct {
	Variant Variant
	// Better are variants above the chosen one that this CPU runs but that
	// are not installed (only when none was forced).
	Better []string
}

// Warning says what running without the better variants costs; empty
// when nothing better is missing.
func (c Choice) Warning() string {
	if len(c.Better) == 0 {
		return ""
	}
	return fmt.Sprintf("this CPU runs the %s engine, which this install lacks: running %s, exact but slower (install it, or build here with make build)",
		strings.Join(c.Better, " and "), c.Variant.Name)
}

// Choose picks from table (baseline first) the best variant among those
// installed that a CPU with features cpu runs, or the one named by force.
// It refuses, naming what is missing, when none fits, when the forced one
// is unknown or not installed, or when the CPU lacks what it needs.
// Installed names outside the table are ignored.
func Choose(table []Variant, cpu Features, installed []string, force string) (Choice, error) {
	if len(table) == 0 {
		return Choice{}, errors.New("udgam-ci has no CPU variants for this architecture")
	}
	have := NewFeatures(installed...)
	if force != "" {
		i := slices.IndexFunc(table, func(v Variant) bool { return v.Name == force })
		switch {
		case i < 0:
			return Choice{}, fmt.Errorf("%s=%s: no such variant (known: %s)", ForceEnv, force, strings.Join(names(table), ", "))
		case !have[force]:
			return Choice{}, fmt.Errorf("%s=%s: not installed (installed: %s)", ForceEnv, force, orNone(installed))
		}
		if miss := table[i].Missing(cpu); len(miss) > 0 {
			return Choice{}, fmt.Errorf("%s=%s: this CPU lacks %s, which that variant is compiled for", ForceEnv, force, strings.Join(miss, ", "))
		}
		return Choice{Variant: table[i]}, nil
	}
	best := -1
	var refused []string
	for i, v := range table {
		if !have[v.Name] {
			continue
		}
		if miss := v.Missing(cpu); len(miss) > 0 {
			refused = append(refused, fmt.Sprintf("%s needs %s", v.Name, strings.Join(miss, ", ")))
			continue
		}
		best = i
	}
	if best < 0 {
		if len(refused) == 0 {
			return Choice{}, fmt.Errorf("no engine variant is installed (want one of %s)", strings.Join(names(table), ", "))
		}
		return Choice{}, fmt.Errorf("no installed engine variant runs on this CPU (%s, which this CPU lacks): build one here with make build", strings.Join(refused, "; "))
	}
	c := Choice{Variant: table[best]}
	for _, v := range table[best+1:] {
		if !have[v.Name] && len(v.Missing(cpu)) == 0 {
			c.Better = append(c.Better, v.Name)
		}
	}
	return c, nil
}

// Dir is where the variants of the udgam-ci at exe are installed:
// PREFIX/libexec beside PREFIX/bin. The variants sit directly in libexec so
// that their ../lib/ollama is PREFIX/lib/ollama, where the engine looks for
// GPU backends, as it does for bin/udgam-ci.
func Dir(exe string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(exe)), "libexec")
}

// Path is the file of variant name in dir.
func Path(dir, name string) string {
	return filepath.Join(dir, Prefix+name)
}

// Installed lists the variants in dir: executable files named Prefix+name.
func Installed(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list engine variants: %w", err)
	}
	var out []string
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), Prefix)
		if !ok || name == "" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("list engine variants: %w", err)
		}
		if info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func names(table []Variant) []string {
	out := make([]string, len(table))
	for i, v := range table {
		out[i] = v.Name
	}
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Find chooses the variant the launcher at exe (symlinks resolved) should
// run on a CPU with features cpu, forced to force when that is not empty,
// and returns its path.
func Find(exe string, cpu Features, goarch, force string) (string, Choice, error) {
	dir := Dir(exe)
	installed, err := Installed(dir)
	if err != nil {
		return "", Choice{}, err
	}
	c, err := Choose(Table(goarch), cpu, installed, force)
	if err != nil {
		return "", Choice{}, fmt.Errorf("%s: %w", dir, err)
	}
	return Path(dir, c.Variant.Name), c, nil
}
