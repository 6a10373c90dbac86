package structure

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// requirement is one line of go.mod's require blocks.
type requirement struct {
	Path     string
	Indirect bool
}

// markings checks go.mod's requirements against what the module's
// packages (and their tests) import: a module they import must be required
// plainly, and a plainly required one must be imported, as `go mod tidy`
// writes them. direct is every module the module's own packages import.
func markings(reqs []requirement, direct map[string]bool) []string {
	var out []string
	listed := map[string]bool{}
	for _, r := range reqs {
		listed[r.Path] = true
		switch {
		case direct[r.Path] && r.Indirect:
			out = append(out, fmt.Sprintf("go.mod: %s is imported but marked // indirect", r.Path))
		case !direct[r.Path] && !r.Indirect:
			out = append(out, fmt.Sprintf("go.mod: %s is not imported but not marked // indirect", r.Path))
		}
	}
	for m := range direct {
		if !listed[m] {
			out = append(out, fmt.Sprintf("go.mod: %s is imported but not required", m))
		}
	}
	sort.Strings(out)
	return out
}

// TestGoModTidy fails when go.mod is not as `go mod tidy` (GOWORK=off)
// leaves it. It reads only what the build already has (go list, go mod
// edit), so it runs offline; tidy itself needs every module of every
// platform's tests. `make tidy` tidies.
func TestGoModTidy(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "mod", "edit", "-json").Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var mod struct{ Require []requirement }
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	moduleOf := map[string]string{}
	for _, p := range list(t) {
		if p.Module != nil && !p.Module.Main {
			moduleOf[p.ImportPath] = p.Module.Path
		}
	}
	direct := map[string]bool{}
	for _, p := range list(t) {
		if p.Module == nil || !p.Module.Main {
			continue
		}
		for _, imps := range [][]string{p.Imports, p.TestImports, p.XTestImports} {
			for _, q := range imps {
				if m, ok := moduleOf[strings.TrimSuffix(q, "_test")]; ok {
					direct[m] = true
				}
			}
		}
	}
	if !direct["github.com/ollama/ollama"] {
		t.Fatal("no package imports github.com/ollama/ollama: the graph read is not the module's")
	}
	for _, v := range markings(mod.Require, direct) {
		t.Error(v)
	}
}

func TestGoModMarkings(t *testing.T) {
	t.Parallel()
	direct := map[string]bool{"a": true, "b": true}
	got := markings([]requirement{{"a", false}, {"b", true}, {"c", false}, {"d", true}}, direct)
	want := []string{
		"go.mod: b is imported but marked // indirect",
		"go.mod: c is not imported but not marked // indirect",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("markings = %q, want %q", got, want)
	}
	if got := markings([]requirement{{"a", false}}, direct); fmt.Sprint(got) != fmt.Sprint([]string{"go.mod: b is imported but not required"}) {
		t.Errorf("markings with b missing = %q", got)
	}
}
