package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Repo is one repository of the fake hub.
type Repo struct {
	hub      *Hub
	branches map[string]string  // branch -> commit
	commits  map[string]*commit // sha -> content
	token    string             // when set, the repository is gated: this token is required
}

type commit struct {
	files map[string][]byte
	lfs   map[string]bool // files stored with LFS: listed with a sha256, downloaded from the CDN
}

// Add publishes files as commit sha of repository name, and moves branch
// "main" to it. name is OWNER/NAME for a model and datasets/OWNER/NAME for
// a dataset, as in the hub's download URLs. The files named in lfs are
// stored with LFS.
func (h *Hub) Add(name, sha string, files map[string][]byte, lfs ...string) *Repo {
	key := repoKey(name)
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[key]
	if r == nil {
		r = &Repo{hub: h, branches: map[string]string{}, commits: map[string]*commit{}}
		h.repos[key] = r
	}
	c := &commit{files: files, lfs: map[string]bool{}}
	for _, p := range lfs {
		c.lfs[p] = true
	}
	r.commits[sha] = c
	r.branches["main"] = sha
	return r
}

// AddDir publishes every regular file of dir as Add does, storing weights
// (*.safetensors, *.gguf) with LFS as the hub's default .gitattributes does.
func (h *Hub) AddDir(name, sha, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("publish %s@%s: %w", name, sha, err)
	}
	files := map[string][]byte{}
	var lfs []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("publish %s@%s: %w", name, sha, err)
		}
		files[e.Name()] = b
		if ext := filepath.Ext(e.Name()); ext == ".safetensors" || ext == ".gguf" {
			lfs = append(lfs, e.Name())
		}
	}
	h.Add(name, sha, files, lfs...)
	return nil
}

// repoKey turns a repository name as Add takes it into "KINDs/OWNER/NAME",
// the form of the API's URLs.
func repoKey(name string) string {
	if strings.HasPrefix(name, "datasets/") {
		return name
	}
	return "models/" + strings.TrimPrefix(name, "models/")
}

// Branch points branch at commit sha (which need not hold files).
func (r *Repo) Branch(branch, sha string) *Repo {
	r.hub.mu.Lock()
	defer r.hub.mu.Unlock()
	r.branches[branch] = sha
	return r
}

// Gate makes the repository answer 401 unless a request carries token as
// its bearer token; an empty token opens it again.
func (r *Repo) Gate(token string) *Repo {
	r.hub.mu.Lock()
	defer r.hub.mu.Unlock()
	r.token = token
	return r
}

// GitOID is the git blob id of b: what the tree listing gives as a file's
// oid when the file is kept in git rather than LFS.
func GitOID(b []byte) string {
	s := sha1.New()
	fmt.Fprintf(s, "blob %d\x00", len(b))
	s.Write(b)
	return hex.EncodeToString(s.Sum(nil))
}

// SHA256 is the hex sha256 of b: an LFS file's oid in the tree listing.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
