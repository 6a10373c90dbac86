package structure

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// notParallel is the comment a test that must run alone (one that reads
// the process's heap, say) carries in its body instead of t.Parallel().
const notParallel = "Not parallel:"

// serialTests lists the top-level tests in src (a _test.go file's text)
// that neither call t.Parallel() as one of their first three statements
// nor say why with notParallel.
func serialTests(path string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
			continue
		}
		if callsParallel(fn.Body.List) || saysWhy(f, fn) {
			continue
		}
		out = append(out, fn.Name.Name)
	}
	return out, nil
}

func callsParallel(stmts []ast.Stmt) bool {
	for _, s := range stmts[:min(3, len(stmts))] {
		es, ok := s.(*ast.ExprStmt)
		if !ok {
			continue
		}
		call, ok := es.X.(*ast.CallExpr)
		if !ok {
			continue
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Parallel" {
			return true
		}
	}
	return false
}

func saysWhy(f *ast.File, fn *ast.FuncDecl) bool {
	for _, cg := range f.Comments {
		if cg.Pos() > fn.Body.Lbrace && cg.End() < fn.Body.Rbrace && strings.Contains(cg.Text(), notParallel) {
			return true
		}
	}
	return false
}

// Tests run side by side (ARCHITECTURE.md): make test's time on 2 cores
// depends on it, and a test that cannot is one that shares state.
func TestTestsRunInParallel(t *testing.T) {
	t.Parallel()
	root := "../.."
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "build" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		serial, err := serialTests(path, src)
		if err != nil {
			return err
		}
		for _, name := range serial {
			t.Errorf("%s: %s neither calls t.Parallel() first nor says %q why not", path, name, notParallel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d test files under %s; the walk missed the module", files, root)
	}
}

func TestSerialTestsFound(t *testing.T) {
	t.Parallel()
	src := `package p
import "testing"
func TestA(t *testing.T) { t.Parallel() }
func TestB(t *testing.T) { t.Helper(); t.Parallel() }
func TestC(t *testing.T) { x := 1; _ = x }
func TestD(t *testing.T) {
	// Not parallel: it reads the heap.
}
func TestE(t *testing.T) { a(); b(); c(); t.Parallel() }
func TestMain(m *testing.M) {}
func helper(t *testing.T) {}
`
	got, err := serialTests("p_test.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "TestC TestE" {
		t.Errorf("serial tests %v, want [TestC TestE]", got)
	}
}
