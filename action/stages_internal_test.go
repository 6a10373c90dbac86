package action

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// environment are the fields of actionRun that run.go writes and every
// stage reads, with why (ARCHITECTURE.md lists them too).
var environment = map[string]string{
	"d":   "the connections, set by Run",
	"a":   "the Action's writer, set by Run",
	"ev":  "the event, set by Run",
	"srv": "the report server's client, set by Run",
	"hub": "the hub's client, set by Run",
	"in":  "the inputs, whose gate run() sets from the base's policy before any later stage",
}

// fieldUse reads the package's production files and returns, per field of
// actionRun, the files that write it and the files that read it. A write
// is an assignment to it or into it, a composite literal's key, or a call
// of one of its set* methods.
func fieldUse(t *testing.T) (writes, reads map[string][]string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	writes, reads = map[string][]string{}, map[string][]string{}
	add := func(m map[string][]string, field, file string) {
		if !slices.Contains(m[field], file) {
			m[field] = append(m[field], file)
		}
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			vars := runVars(fn)
			// field is the field of actionRun that e reaches into: r.f,
			// r.f.g, r.f[i], ...; "" for none.
			var field func(e ast.Expr) string
			field = func(e ast.Expr) string {
				switch x := e.(type) {
				case *ast.SelectorExpr:
					if id, ok := x.X.(*ast.Ident); ok && vars[id.Name] {
						return x.Sel.Name
					}
					return field(x.X)
				case *ast.IndexExpr:
					return field(x.X)
				case *ast.StarExpr:
					return field(x.X)
				}
				return ""
			}
			written := map[ast.Node]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.AssignStmt:
					for _, l := range x.Lhs {
						if f := field(l); f != "" {
							add(writes, f, name)
							written[l] = true
						}
					}
				case *ast.IncDecStmt:
					if f := field(x.X); f != "" {
						add(writes, f, name)
						written[x.X] = true
					}
				case *ast.CallExpr:
					if sel, ok := x.Fun.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "set") {
						if f := field(sel.X); f != "" {
							add(writes, f, name)
						}
					}
				case *ast.CompositeLit:
					if id, ok := x.Type.(*ast.Ident); ok && id.Name == "actionRun" {
						for _, el := range x.Elts {
							if kv, ok := el.(*ast.KeyValueExpr); ok {
								add(writes, kv.Key.(*ast.Ident).Name, name)
							}
						}
					}
				case *ast.SelectorExpr:
					if written[x] {
						return true
					}
					if id, ok := x.X.(*ast.Ident); ok && vars[id.Name] {
						add(reads, x.Sel.Name, name)
					}
				}
				return true
			})
		}
	}
	return writes, reads
}

// runVars are fn's names for an *actionRun: its receiver, and locals made
// by &actionRun{...}.
func runVars(fn *ast.FuncDecl) map[string]bool {
	vars := map[string]bool{}
	if fn.Recv != nil && len(fn.Recv.List) == 1 && len(fn.Recv.List[0].Names) == 1 {
		if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
			if id, ok := star.X.(*ast.Ident); ok && id.Name == "actionRun" {
				vars[fn.Recv.List[0].Names[0].Name] = true
			}
		}
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != len(as.Rhs) {
			return true
		}
		for i, r := range as.Rhs {
			if u, ok := r.(*ast.UnaryExpr); ok {
				if cl, ok := u.X.(*ast.CompositeLit); ok {
					if id, ok := cl.Type.(*ast.Ident); ok && id.Name == "actionRun" {
						if l, ok := as.Lhs[i].(*ast.Ident); ok {
							vars[l.Name] = true
						}
					}
				}
			}
		}
		return true
	})
	return vars
}

// The Action's stages hand each other values, not fields: no field of
// actionRun is written in one file and read in another, but the job's
// environment, which run.go alone writes before the stages that read it.
func TestStagesShareNoState(t *testing.T) {
	t.Parallel()
	writes, reads := fieldUse(t)
	// The reading is real: warn keeps the notes that publish reads.
	if len(writes["notes"]) == 0 || len(reads["notes"]) == 0 {
		t.Fatalf("notes written in %q and read in %q: the reading of the package is broken", writes["notes"], reads["notes"])
	}
	var fields []string
	for f := range writes {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		if _, ok := environment[f]; ok {
			if !slices.Equal(writes[f], []string{"run.go"}) {
				t.Errorf("actionRun.%s (%s) is written in %q: only run.go may write the environment", f, environment[f], writes[f])
			}
			continue
		}
		for _, r := range reads[f] {
			if !slices.Contains(writes[f], r) || len(writes[f]) > 1 {
				t.Errorf("actionRun.%s is written in %q and read in %s: return it from the stage instead", f, writes[f], r)
				break
			}
		}
	}
	for f := range environment {
		if len(writes[f]) == 0 {
			t.Errorf("actionRun.%s is listed as environment but never written: drop it from the list", f)
		}
	}
}
