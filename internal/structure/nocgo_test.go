package structure

import (
	"errors"
	"fmt"
	"go/build"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// nocgoExceptions are packages that do not yet build without cgo, and why.
// The engine's binding is reworked apart from issue 41; with its test
// files and llamatest.go tagged `//go:build cgo` (checked in a copy:
// `CGO_ENABLED=0 go vet ./...` then passes) this list is empty.
var nocgoExceptions = map[string]string{
	module + "/runner/llama":           "its test files are not tagged cgo (the engine's rework)",
	module + "/runner/llama/llamatest": "llamatest.go is not tagged cgo (the engine's rework)",
}

// nocgoProblems reads the packages (import path to folder) as
// `CGO_ENABLED=0 go vet` and `go test` do, without compiling, and lists by
// package what stops them building: test files built while the package's
// own files all need cgo, and a built file importing a package of the set
// whose files all need cgo. Such a file wants `//go:build cgo`
// (cmd/udgam-ci's engine.go and engine_nocgo.go show the other way: a
// seam with a file for each).
func nocgoProblems(pkgs map[string]string) (map[string][]string, error) {
	on, off := build.Default, build.Default
	on.CgoEnabled, off.CgoEnabled = true, false
	var noGo *build.NoGoError
	cgoOnly := map[string]bool{}
	built := map[string]*build.Package{}
	for path, dir := range pkgs {
		with, err := on.ImportDir(dir, 0)
		if errors.As(err, &noGo) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		without, err := off.ImportDir(dir, 0)
		if err != nil && !errors.As(err, &noGo) {
			return nil, fmt.Errorf("%s without cgo: %w", path, err)
		}
		cgoOnly[path] = len(without.GoFiles) == 0 && len(with.GoFiles)+len(with.CgoFiles) > 0
		if err == nil {
			built[path] = without
		}
	}
	out := map[string][]string{}
	for path, p := range built {
		if cgoOnly[path] && len(p.TestGoFiles) > 0 {
			out[path] = append(out[path], fmt.Sprintf("%s: its tests (%s, ...) are built without cgo, its own files are not", path, p.TestGoFiles[0]))
		}
		for _, m := range []map[string][]token.Position{p.ImportPos, p.TestImportPos, p.XTestImportPos} {
			for imp, at := range m {
				if cgoOnly[imp] {
					out[path] = append(out[path], fmt.Sprintf("%s/%s imports %s, whose files all need cgo", path, filepath.Base(at[0].Filename), imp))
				}
			}
		}
		sort.Strings(out[path])
	}
	return out, nil
}

// TestBuildsWithoutCgo: `CGO_ENABLED=0 go vet ./...` and `go test ./...`
// build every package (issue 41: convert, convert/tokenizer and
// evals/audit did not), so everything apart from the engine is checked
// without compiling llama.cpp, and the engine's tests skip.
func TestBuildsWithoutCgo(t *testing.T) {
	t.Parallel()
	dirs := map[string]string{}
	for _, p := range own(t) {
		dirs[p.ImportPath] = p.Dir
	}
	problems, err := nocgoProblems(dirs)
	if err != nil {
		t.Fatal(err)
	}
	for path, vs := range problems {
		if _, ok := nocgoExceptions[path]; !ok {
			for _, v := range vs {
				t.Error(v)
			}
		}
	}
}

// The check finds both ways a package fails without cgo, and passes a
// file tagged cgo.
func TestNoCgoProblems(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"engine/engine.go":      "package engine\n\nimport \"C\"\n\nfunc F() {}\n",
		"engine/engine_test.go": "package engine\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) { F() }\n",
		"user/user.go":          "package user\n",
		"user/user_test.go":     "package user\n\nimport _ \"x/engine\"\n",
		"tagged/tagged.go":      "package tagged\n",
		"tagged/tagged_test.go": "//go:build cgo\n\npackage tagged\n\nimport _ \"x/engine\"\n",
	}
	pkgs := map[string]string{}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		pkgs["x/"+filepath.Dir(name)] = filepath.Dir(p)
	}
	got, err := nocgoProblems(pkgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got["x/engine"]) != 1 || len(got["x/user"]) != 1 || got["x/tagged"] != nil {
		t.Errorf("problems %q: want one for x/engine (its tests) and one for x/user (its import), none for x/tagged", got)
	}
}
