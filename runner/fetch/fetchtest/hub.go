// Package fetchtest is a fake Hugging Face hub for tests: it answers the
// revision, tree and resolve URLs the hub client requests, with the JSON
// shapes the real hub sends, from files held in memory.
package fetchtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// Hub is a fake hub serving model repositories.
type Hub struct {
	*httptest.Server

	mu       sync.Mutex
	repos    map[string]*repo // OWNER/NAME
	requests []string         // "METHOD path" in order
}

type repo struct {
	branches map[string]string            // branch -> commit
	commits  map[string]map[string][]byte // commit -> path -> content
}

// New starts a fake hub; it stops when the test ends.
func New(t testing.TB) *Hub {
	h := &Hub{repos: map[string]*repo{}}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.Close)
	return h
}

// Add publishes files as commit sha of repository name; branch "main"
// moves to it.
func (h *Hub) Add(name, sha string, files map[string][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[name]
	if r == nil {
		r = &repo{branches: map[string]string{}, commits: map[string]map[string][]byte{}}
		h.repos[name] = r
	}
	r.commits[sha] = files
	r.branches["main"] = sha
}

// AddDir publishes every regular file of dir.
func (h *Hub) AddDir(name, sha, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return err
			}
			files[e.Name()] = b
		}
	}
	h.Add(name, sha, files)
	return nil
}

// Requests returns how many requests had a path starting with prefix.
func (h *Hub) Requests(prefix string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.requests {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.requests = append(h.requests, r.URL.Path)
	h.mu.Unlock()
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 6 && parts[0] == "api" && parts[1] == "models" && parts[4] == "revision":
		rp := h.repo(parts[2] + "/" + parts[3])
		if rp == nil {
			notFound(w, "Repository not found")
			return
		}
		sha, ok := rp.branches[parts[5]]
		if _, commit := rp.commits[parts[5]]; commit {
			sha, ok = parts[5], true
		}
		if !ok {
			notFound(w, "Invalid rev id: "+parts[5])
			return
		}
		writeJSON(w, map[string]any{"id": parts[2] + "/" + parts[3], "sha": sha})
	case len(parts) >= 6 && parts[0] == "api" && parts[1] == "models" && parts[4] == "tree":
		files := h.files(parts[2]+"/"+parts[3], parts[5])
		if files == nil {
			notFound(w, "Revision not found")
			return
		}
		var list []map[string]any
		for _, p := range runfile.SortedKeys(files) {
			b := files[p]
			list = append(list, map[string]any{
				"type": "file", "path": p, "size": len(b), "oid": gitOID(b),
				"lfs": map[string]any{"oid": sha256hex(b), "size": len(b), "pointerSize": 134},
			})
		}
		writeJSON(w, list)
	case len(parts) >= 5 && parts[2] == "resolve":
		files := h.files(parts[0]+"/"+parts[1], parts[3])
		if files == nil {
			notFound(w, "Revision not found")
			return
		}
		b, ok := files[strings.Join(parts[4:], "/")]
		if !ok {
			notFound(w, "Entry not found")
			return
		}
		w.Header().Set("X-Repo-Commit", parts[3])
		http.ServeContent(w, r, parts[len(parts)-1], time.Time{}, bytes.NewReader(b))
	default:
		notFound(w, "not found")
	}
}

func (h *Hub) repo(name string) *repo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.repos[name]
}

// files returns a commit's files, nil when the repository or commit is unknown.
func (h *Hub) files(name, sha string) map[string][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.repos[name]; r != nil {
		return r.commits[sha]
	}
	return nil
}

func notFound(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprintf(w, "{\"error\":%q}\n", msg)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func gitOID(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
