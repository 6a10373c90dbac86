package structure

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// nocgoProblems reads the packages (import path to folder) as
// `CGO_ENABLED=0 go vet` and `go test` do, without compiling, and lists by
// package what stops them building: a library with no file built without
// cgo, C sources built without cgo (the go command refuses them), and, for
// a package that is empty without cgo but not with it (the engine: every
// file but its doc.go needs cgo), its test files built without cgo and
// files of other packages built without cgo that import it. Such a file
// wants `//go:build cgo` (cmd/udgam-ci's engine.go and engine_nocgo.go
// show the other way: a seam with a file for each).
func nocgoProblems(pkgs map[string]string) (map[string][]string, error) {
	on, off := build.Default, build.Default
	on.CgoEnabled, off.CgoEnabled = true, false
	var noGo *build.NoGoError
	empty := map[string]bool{}
	built := map[string]*build.Package{}
	out := map[string][]string{}
	for path, dir := range pkgs {
		with, err := on.ImportDir(dir, 0)
		if errors.As(err, &noGo) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		without, err := off.ImportDir(dir, 0)
		if errors.As(err, &noGo) {
			// A command needs its main function: left out whole, it is right.
			if len(with.GoFiles)+len(with.CgoFiles) > 0 && with.Name != "main" {
				empty[path] = true
				out[path] = append(out[path], fmt.Sprintf("%s: no file is built without cgo, so `go vet ./...` passes it over; give it one (a doc.go)", path))
			}
			continue
		} else if err != nil {
			return nil, fmt.Errorf("%s without cgo: %w", path, err)
		}
		emptyWith, err := declaresNothing(dir, append(with.GoFiles, with.CgoFiles...))
		if err != nil {
			return nil, err
		}
		emptyWithout, err := declaresNothing(dir, without.GoFiles)
		if err != nil {
			return nil, err
		}
		empty[path] = emptyWithout && !emptyWith
		built[path] = without
		for _, files := range [][]string{without.CFiles, without.CXXFiles, without.MFiles, without.FFiles, without.SwigFiles} {
			for _, f := range files {
				out[path] = append(out[path], fmt.Sprintf("%s/%s is built without cgo, which the go command refuses for C sources", path, f))
			}
		}
	}
	for path, p := range built {
		if empty[path] && len(p.TestGoFiles) > 0 {
			out[path] = append(out[path], fmt.Sprintf("%s: its tests (%s, ...) are built without cgo, its own files are not", path, p.TestGoFiles[0]))
		}
		for _, m := range []map[string][]token.Position{p.ImportPos, p.TestImportPos, p.XTestImportPos} {
			for imp, at := range m {
				if empty[imp] {
					out[path] = append(out[path], fmt.Sprintf("%s/%s imports %s, whose files all need cgo", path, filepath.Base(at[0].Filename), imp))
				}
			}
		}
	}
	for path := range out {
		sort.Strings(out[path])
	}
	return out, nil
}

// declaresNothing says whether the files (in dir) declare nothing but
// their package and imports: a package built from them alone is empty.
func declaresNothing(dir string, files []string) (bool, error) {
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return false, err
		}
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); !ok || g.Tok != token.IMPORT {
				return false, nil
			}
		}
	}
	return true, nil
}

// TestBuildsWithoutCgo: `CGO_ENABLED=0 go vet ./...` and `go test ./...`
// build every package (issue 41: convert, convert/tokenizer, evals/audit
// and the engine's own tests did not), so everything apart from the
// engine is checked without compiling llama.cpp, and the engine's tests
// skip. nocgoProblems says which file wants a tag; `go vet` itself, run
// without cgo, catches what reading the files cannot (a file built
// without cgo calling a function of one built with it).
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
	for _, vs := range problems {
		for _, v := range vs {
			t.Error(v)
		}
	}
	cmd := exec.Command("go", "vet", module+"/...")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("CGO_ENABLED=0 go vet %s/...: %v\n%s", module, err, out)
	}
}

// The check finds each way a package fails without cgo, and passes a
// file tagged cgo and a seam with a file for each build.
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
		// Empty without cgo but for its doc: its tests want the tag too.
		"doc/doc.go":      "// Package doc is an engine.\npackage doc\n\nimport _ \"fmt\"\n",
		"doc/doc_cgo.go":  "package doc\n\nimport \"C\"\n\nfunc F() {}\n",
		"doc/doc_test.go": "package doc\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) { F() }\n",
		"doc/helper.c":    "//go:build cgo\n\nint helper(void) { return 0; }\n",
		// A seam: a stand-in for each cgo function, so its tests build.
		"seam/seam.go":       "package seam\n\nimport \"C\"\n\nfunc F() {}\n",
		"seam/seam_nocgo.go": "//go:build !cgo\n\npackage seam\n\nfunc F() {}\n",
		"seam/seam_test.go":  "package seam\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) { F() }\n",
		// C sources the go command refuses without cgo.
		"csrc/csrc.go":  "package csrc\n",
		"csrc/helper.c": "int helper(void) { return 0; }\n",
		// Every file tagged: go vet passes it over.
		"hidden/hidden.go": "//go:build cgo\n\npackage hidden\n",
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
	want := map[string]string{
		"x/engine": "x/engine: its tests (engine_test.go, ...) are built without cgo, its own files are not",
		"x/user":   "x/user/user_test.go imports x/engine, whose files all need cgo",
		"x/doc":    "x/doc: its tests (doc_test.go, ...) are built without cgo, its own files are not",
		"x/csrc":   "x/csrc/helper.c is built without cgo, which the go command refuses for C sources",
		"x/hidden": "x/hidden: no file is built without cgo, so `go vet ./...` passes it over; give it one (a doc.go)",
	}
	for path, v := range want {
		if len(got[path]) != 1 || got[path][0] != v {
			t.Errorf("%s: problems %q, want %q", path, got[path], v)
		}
	}
	for path, vs := range got {
		if _, ok := want[path]; !ok {
			t.Errorf("%s: problems %q, want none", path, vs)
		}
	}
}
