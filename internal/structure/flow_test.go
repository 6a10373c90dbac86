package structure

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"
)

// stages places production packages in the flow, by longest matching path
// prefix: a package may import its own stage and the stages before it.
// internal/ and the contracts (the run file, the GGUF contract) come first
// because every stage shares them; cmd/ wires everything.
var stages = []struct {
	name     string
	prefixes []string
}{
	{"base", []string{"internal"}},
	{"contracts", []string{"runfile", "ggufspec"}},
	// The anytime-valid stopping rule: a leaf of statistics (it imports
	// only internal/) that the scorers obey while scoring and compare
	// replays afterwards.
	{"stopping rule", []string{"compare/sequential"}},
	{"checkpoint", []string{"hub"}},
	{"GGUF", []string{"convert", "fetch"}},
	{"scoring", []string{"runner", "evals"}},
	{"run file", []string{"server/client"}},
	{"comparison", []string{"compare"}},
	// The artifact audit scores two models, compares them and renders its
	// section: it comes after the comparison it makes.
	{"comment/server", []string{"report", "templates", "action", "server", "evals/audit"}},
	{"wiring", []string{"cmd"}},
}

// referencePackages are references, test models and test helpers that are
// not named *test: production never imports them. tools are programs for
// development (demo, benchmarks, load generation), which may import
// anything but which production never imports either.
var (
	referencePackages = []string{"internal/reference", "evals/probes/bench"}
	tools             = []string{"scripts", "server/cmd"}
)

// checks are production packages that check another path rather than
// take it: the Go tokenizer and the comparison `model check-tokenizer`
// makes. Only the commands wire them; the path they check (runner/textprep
// and its hfprep) must not lean on them, or a check would check itself.
var checks = []string{"runner/hftok", "runner/tokcheck"}

// against are the imports against the flow still allowed, each with why:
// none. An entry is work left, and the test fails once one is no longer
// needed.
var against = map[[2]string]string{}

func under(p string, prefixes []string) (string, bool) {
	best, ok := "", false
	for _, pre := range prefixes {
		if (p == pre || strings.HasPrefix(p, pre+"/")) && len(pre) >= len(best) {
			best, ok = pre, true
		}
	}
	return best, ok
}

// kind is "reference", "tool" or "" (production).
func kind(p string) string {
	if strings.HasSuffix(path.Base(p), "test") {
		return "reference"
	}
	if _, ok := under(p, referencePackages); ok {
		return "reference"
	}
	if _, ok := under(p, tools); ok {
		return "tool"
	}
	return ""
}

// stage is p's index in stages (-1: none).
func stage(p string) int {
	best, at := "", -1
	for i, s := range stages {
		if pre, ok := under(p, s.prefixes); ok && len(pre) >= len(best) {
			best, at = pre, i
		}
	}
	return at
}

// violations checks a graph of the module's packages: imports holds each
// package's direct imports within the module, deps all it depends on
// (both without tests).
func violations(imports, deps map[string][]string) []string {
	var out []string
	for p, imps := range imports {
		if kind(p) != "" {
			continue
		}
		sp := stage(p)
		if sp < 0 {
			out = append(out, fmt.Sprintf("%s: production package in no stage of the flow (add it to stages)", p))
			continue
		}
		_, isCmd := under(p, []string{"cmd"})
		_, isCheck := under(p, checks)
		for _, q := range deps[p] {
			if k := kind(q); k != "" {
				out = append(out, fmt.Sprintf("%s depends on %s %s", p, k, q))
			}
			if _, ok := under(q, checks); ok && !isCmd && !isCheck {
				out = append(out, fmt.Sprintf("%s depends on check %s, which only the commands wire", p, q))
			}
		}
		for _, q := range imps {
			if _, ok := against[[2]string{p, q}]; ok {
				continue
			}
			if sq := stage(q); kind(q) == "" && sq > sp {
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s), later in the flow", p, stages[sp].name, q, stages[sq].name))
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestFlow(t *testing.T) {
	t.Parallel()
	imports, deps := map[string][]string{}, map[string][]string{}
	for p, info := range own(t) {
		for _, q := range info.Imports {
			if r := rel(q); r != "" {
				imports[p] = append(imports[p], r)
			}
		}
		for _, q := range info.Deps {
			if r := rel(q); r != "" {
				deps[p] = append(deps[p], r)
			}
		}
		if _, ok := imports[p]; !ok {
			imports[p] = nil
		}
	}
	for _, v := range violations(imports, deps) {
		t.Error(v)
	}
	for pq, why := range against {
		if !slices.Contains(imports[pq[0]], pq[1]) {
			t.Errorf("%s no longer imports %s (%s): drop it from against", pq[0], pq[1], why)
		}
	}
	// The command links the engine and every stage; none of that may be
	// a reference.
	if !slices.Contains(deps["cmd/udgam-ci"], "runner/llama") {
		t.Errorf("cmd/udgam-ci does not depend on runner/llama: the graph read is not the module's")
	}
}

// The checks catch what they are for.
func TestFlowViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		imports, deps map[string][]string
		want          string
	}{
		{"against the flow", map[string][]string{"convert": {"runner"}}, nil, "convert (GGUF) imports runner (scoring), later in the flow"},
		{"measuring imports presentation", map[string][]string{"evals/contamination": {"report"}}, nil, "evals/contamination (scoring) imports report (comment/server), later in the flow"},
		{"scoring summarises with the comparison", map[string][]string{"evals/probes": {"compare"}}, nil, "evals/probes (scoring) imports compare (comparison), later in the flow"},
		{"bottom knows the run file", map[string][]string{"internal/ghenv": {"runfile"}}, nil, "internal/ghenv (base) imports runfile (contracts), later in the flow"},
		{"test model in production", map[string][]string{"cmd/udgam-ci": {"runner"}}, map[string][]string{"cmd/udgam-ci": {"runner", "internal/reference/testmodel"}}, "cmd/udgam-ci depends on reference internal/reference/testmodel"},
		{"test helper in production", map[string][]string{"action": nil}, map[string][]string{"action": {"hub/hubtest"}}, "action depends on reference hub/hubtest"},
		{"tool in production", map[string][]string{"server": nil}, map[string][]string{"server": {"server/cmd/loadgen"}}, "server depends on tool server/cmd/loadgen"},
		{"production leans on its check", map[string][]string{"runner/textprep": {"runner/hftok"}}, map[string][]string{"runner/textprep": {"runner/hftok"}}, "runner/textprep depends on check runner/hftok, which only the commands wire"},
		{"unplaced", map[string][]string{"newthing": nil}, nil, "newthing: production package in no stage of the flow (add it to stages)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := violations(tt.imports, tt.deps); !slices.Equal(got, []string{tt.want}) {
				t.Errorf("violations = %q, want %q", got, tt.want)
			}
		})
	}
	fine := map[string][]string{"cmd/udgam-ci": {"runner/llama", "action", "runner/hftok"}, "report": {"compare", "templates"}, "internal/reference/testmodel": {"runner"}, "scripts/demomodels": {"internal/reference/testmodel"},
		"runner/hftok": {"runner/textprep/hfprep", "internal/tokjson"}, "runner/textprep": {"runner/textprep/hfprep"}, "convert/tokenizer": {"internal/tokjson"}}
	if got := violations(fine, fine); len(got) > 0 {
		t.Errorf("violations of a graph along the flow: %q", got)
	}
}
