package structure

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/udgamlabs/udgam-ci"

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath, Dir string
	Standard        bool
	Module          *struct {
		Path string
		Main bool
	}
	Imports, TestImports, XTestImports, Deps []string
}

// listTags are the build tags any file of the module uses, so every file
// is read.
const listTags = "llama,fakecpu"

var (
	listOnce sync.Once
	listed   []pkg
	listErr  error
)

// list runs `go list -deps -test -json ./...` once for the package's tests.
func list(t *testing.T) []pkg {
	t.Helper()
	listOnce.Do(func() {
		cmd := exec.Command("go", "list", "-deps", "-test", "-tags", listTags, "-json", module+"/...")
		// The whole graph, engine included, even under CGO_ENABLED=0 (go
		// list reads files; it compiles nothing).
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			listErr = err
			if stderr.Len() > 0 {
				listErr = &listError{err, stderr.String()}
			}
			return
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p pkg
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				listErr = err
				return
			}
			listed = append(listed, p)
		}
	})
	if listErr != nil {
		t.Fatalf("go list: %v", listErr)
	}
	return listed
}

type listError struct {
	err    error
	stderr string
}

func (e *listError) Error() string { return e.err.Error() + ": " + e.stderr }

// own is the module's packages themselves (not test variants), by import
// path relative to the module.
func own(t *testing.T) map[string]pkg {
	out := map[string]pkg{}
	for _, p := range list(t) {
		if p.Module != nil && p.Module.Main && !strings.Contains(p.ImportPath, " ") && !strings.HasSuffix(p.ImportPath, ".test") {
			out[rel(p.ImportPath)] = p
		}
	}
	if len(out) < 20 {
		t.Fatalf("go list found %d packages of %s, want the whole module", len(out), module)
	}
	return out
}

// rel is path relative to the module ("runner/llama"), or "" for a
// path outside it.
func rel(path string) string {
	if path == module {
		return "."
	}
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r
	}
	return ""
}
