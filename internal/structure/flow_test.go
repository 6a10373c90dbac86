package structure

import (
	"fmt"
	"os"
	"path"
	"regexp"
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
	{"comment/server", []string{"report", "templates", "action", "server", "export", "evals/audit"}},
	{"wiring", []string{"cmd"}},
}

// referencePackages are references, test models and test helpers that are
// not named *test: production never imports them. tools are programs for
// development (demo, benchmarks, load generation), which may import
// anything but which production never imports either.
var (
	referencePackages = []string{"reference", "evals/probes/bench"}
	tools             = []string{"scripts", "server/cmd"}
)

// checks are production packages that check another path rather than
// take it: the Go tokenizer and the comparison `model check-tokenizer`
// makes. Only the commands wire them; the path they check (runner/textprep
// and its hfprep) must not lean on them, or a check would check itself.
var checks = []string{"runner/hftok", "runner/tokcheck"}

// stores keep rows: the server judges an upload (checks, scores, replays)
// and hands the store a judged row, so a store depends on no package
// that judges, as Litestream's ReplicaClient is storage only.
var (
	stores = []string{"server/store"}
	judges = []string{"compare", "evals", "report"}
)

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
		// internal/ holds base packages only, references and helpers
		// included: one that leaned on a later stage would draw an arrow
		// back up from the bottom of the flow.
		_, isBase := under(p, []string{"internal"})
		for _, q := range imps {
			if _, ok := under(q, []string{"internal"}); isBase && !ok {
				out = append(out, fmt.Sprintf("%s imports %s: internal/ holds only base packages, which import nothing of the module outside internal/", p, q))
			}
		}
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
		_, isStore := under(p, stores)
		for _, q := range deps[p] {
			if k := kind(q); k != "" {
				out = append(out, fmt.Sprintf("%s depends on %s %s", p, k, q))
			}
			if _, ok := under(q, judges); ok && isStore {
				out = append(out, fmt.Sprintf("%s depends on %s, which judges: a store stores what the server judged", p, q))
			}
			if _, ok := under(q, checks); ok && !isCmd && !isCheck {
				out = append(out, fmt.Sprintf("%s depends on check %s, which only the commands wire", p, q))
			}
		}
		for _, q := range imps {
			if _, ok := against[[2]string{p, q}]; ok {
				continue
			}
			if sq := stage(q); kind(q) == "" && sq > sp && !isBase {
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
		{"bottom knows the run file", map[string][]string{"internal/ghenv": {"runfile"}}, nil, "internal/ghenv imports runfile: internal/ holds only base packages, which import nothing of the module outside internal/"},
		{"reference under internal leans on the engine", map[string][]string{"internal/reference/testmodel": {"runner", "internal/atomicfile"}}, nil, "internal/reference/testmodel imports runner: internal/ holds only base packages, which import nothing of the module outside internal/"},
		{"test helper under internal leans on a contract", map[string][]string{"internal/goldentest": {"runfile"}}, nil, "internal/goldentest imports runfile: internal/ holds only base packages, which import nothing of the module outside internal/"},
		{"reference in production", map[string][]string{"convert/tokenizer": {"internal/tokjson"}}, map[string][]string{"convert/tokenizer": {"internal/tokjson", "reference/hfref"}}, "convert/tokenizer depends on reference reference/hfref"},
		{"test model in production", map[string][]string{"cmd/udgam-ci": {"runner"}}, map[string][]string{"cmd/udgam-ci": {"runner", "reference/testmodel"}}, "cmd/udgam-ci depends on reference reference/testmodel"},
		{"test helper in production", map[string][]string{"action": nil}, map[string][]string{"action": {"hub/hubtest"}}, "action depends on reference hub/hubtest"},
		{"tool in production", map[string][]string{"server": nil}, map[string][]string{"server": {"server/cmd/loadgen"}}, "server depends on tool server/cmd/loadgen"},
		{"production leans on its check", map[string][]string{"runner/textprep": {"runner/hftok"}}, map[string][]string{"runner/textprep": {"runner/hftok"}}, "runner/textprep depends on check runner/hftok, which only the commands wire"},
		{"store judges", map[string][]string{"server/store": {"runfile"}}, map[string][]string{"server/store": {"runfile", "compare/sequential"}}, "server/store depends on compare/sequential, which judges: a store stores what the server judged"},
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
	fine := map[string][]string{"cmd/udgam-ci": {"runner/llama", "action", "runner/hftok"}, "report": {"compare", "templates"}, "reference/testmodel": {"runner"}, "scripts/demomodels": {"reference/testmodel"},
		"runner/hftok": {"runner/textprep/hfprep", "internal/tokjson"}, "runner/textprep": {"runner/textprep/hfprep"}, "convert/tokenizer": {"internal/tokjson"}}
	if got := violations(fine, fine); len(got) > 0 {
		t.Errorf("violations of a graph along the flow: %q", got)
	}
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// stageRows reads the stage table of ARCHITECTURE.md ("| Stage | Packages
// |"): each row's stage and the packages it names in code, `pkg` or
// `pkg/...`.
func stageRows(md string) (names []string, pkgs map[string][]string) {
	_, table, _ := strings.Cut(md, "| Stage | Packages |")
	pkgs = map[string][]string{}
	for i, line := range strings.Split(table, "\n") {
		if i == 0 {
			continue // the rest of the header line
		}
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 4 {
			if i > 1 {
				break
			}
			continue
		}
		name := strings.TrimSpace(cells[1])
		if strings.Trim(name, "-") == "" {
			continue
		}
		names = append(names, name)
		for _, m := range codeSpan.FindAllStringSubmatch(cells[2], -1) {
			pkgs[name] = append(pkgs[name], strings.TrimSuffix(m[1], "/..."))
		}
	}
	return names, pkgs
}

// stageDocProblems lists where ARCHITECTURE.md's stage table and the flow
// line of structure's package doc (doc) differ from stages: every stage,
// in order, with each of its prefixes (or a package under it) in its row.
func stageDocProblems(md, doc string) []string {
	var out []string
	names, pkgs := stageRows(md)
	var want []string
	for _, s := range stages {
		want = append(want, s.name)
		for _, p := range s.prefixes {
			if !slices.ContainsFunc(pkgs[s.name], func(q string) bool { return q == p || strings.HasPrefix(q, p+"/") }) {
				out = append(out, fmt.Sprintf("ARCHITECTURE.md: the %s row does not name `%s`", s.name, p))
			}
		}
	}
	if !slices.Equal(names, want) {
		out = append(out, fmt.Sprintf("ARCHITECTURE.md: stages %q, want %q", names, want))
	}
	if flow := strings.Join(want, " -> "); !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(doc, "//", "")), " "), flow) {
		out = append(out, "doc.go: the flow line is not "+flow)
	}
	return out
}

// ARCHITECTURE.md and this package's doc draw the flow TestFlow enforces:
// a stage added to stages and missing there fails here.
func TestFlowDocumented(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range stageDocProblems(string(md), string(doc)) {
		t.Error(v)
	}
}

func TestStageDocProblems(t *testing.T) {
	t.Parallel()
	var rows, flow []string
	for _, s := range stages {
		rows = append(rows, fmt.Sprintf("| %s | `%s/...` |", s.name, strings.Join(s.prefixes, "`, `")))
		flow = append(flow, s.name)
	}
	table := "| Stage | Packages |\n|---|---|\n" + strings.Join(rows, "\n") + "\n\nafter\n"
	doc := "// the flow " + strings.Join(flow, "\n// -> ") + " (ARCHITECTURE.md)"
	if got := stageDocProblems(table, doc); len(got) != 0 {
		t.Errorf("in step: %q", got)
	}
	missing := strings.Replace(table, rows[2]+"\n", "", 1)
	if got := stageDocProblems(missing, doc); len(got) != 2 {
		t.Errorf("a stage missing from the table: %q, want its prefix and the order named", got)
	}
	short := strings.Replace(table, ", `evals/audit/...`", "", 1)
	if got := stageDocProblems(short, doc); len(got) != 1 || !strings.Contains(got[0], "evals/audit") {
		t.Errorf("a prefix missing: %q", got)
	}
	if got := stageDocProblems(table, strings.Replace(doc, "stopping rule\n// -> ", "", 1)); len(got) != 1 {
		t.Errorf("a stage missing from the doc: %q", got)
	}
}
