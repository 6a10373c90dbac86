package hub

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHub speaks the hub's URLs and JSON: revision info, paginated tree
// listings, and file downloads that redirect LFS files to a separate "CDN"
// server (as the real hub does with a 302), with Range support and faults
// to inject.
type fakeHub struct {
	t        *testing.T
	api, cdn *httptest.Server
	pageSize int // tree entries per page; Link pagination beyond

	mu       sync.Mutex
	repos    map[string]*fakeRepo // "datasets/owner/name" or "models/owner/name"
	requests []string             // "METHOD path" of every request, both servers
	ranges   []string             // Range headers the CDN received, in order
	fail     map[string]int       // path -> number of 500s still to answer
	truncate map[string]int       // path -> bytes to send before cutting the body, once
	corrupt  map[string]bool      // path -> flip a byte of the body
	noRange  bool                 // answer Range requests with the whole file (200)
}

type fakeRepo struct {
	sha      string
	branches map[string]string
	files    map[string][]byte
	lfs      map[string]bool
	token    string // when set, the repository is gated: this token is required
}

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{t: t, pageSize: 2, repos: map[string]*fakeRepo{},
		fail: map[string]int{}, truncate: map[string]int{}, corrupt: map[string]bool{}}
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.api = httptest.NewServer(http.HandlerFunc(h.serveAPI))
	t.Cleanup(func() { h.api.Close(); h.cdn.Close() })
	return h
}

func (h *fakeHub) add(kind Kind, repo, sha string, files map[string][]byte, lfs ...string) *fakeRepo {
	r := &fakeRepo{sha: sha, branches: map[string]string{"main": sha}, files: files, lfs: map[string]bool{}}
	for _, p := range lfs {
		r.lfs[p] = true
	}
	h.repos[string(kind)+"s/"+repo] = r
	return r
}

func (h *fakeHub) count(prefix string) int {
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

func (h *fakeHub) log(r *http.Request) {
	h.mu.Lock()
	h.requests = append(h.requests, r.Method+" "+r.URL.Path)
	h.mu.Unlock()
}

func gitOID(b []byte) string {
	s := sha1.New()
	fmt.Fprintf(s, "blob %d\x00", len(b))
	s.Write(b)
	return hex.EncodeToString(s.Sum(nil))
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// repoFor splits "/api/datasets/o/n/tree/sha" style paths.
func (h *fakeHub) repoFor(kindPlural, owner, name string) *fakeRepo {
	return h.repos[kindPlural+"/"+owner+"/"+name]
}

func (h *fakeHub) authorized(w http.ResponseWriter, r *http.Request, repo *fakeRepo) bool {
	if repo.token == "" || r.Header.Get("Authorization") == "Bearer "+repo.token {
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprint(w, `{"error":"Access to this resource is restricted. You must be authenticated."}`)
	return false
}

func (h *fakeHub) serveAPI(w http.ResponseWriter, r *http.Request) {
	h.log(r)
	if r.Header.Get("User-Agent") == "" {
		h.t.Errorf("%s: no User-Agent", r.URL)
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	h.mu.Lock()
	n := h.fail[r.URL.Path]
	if n > 0 {
		h.fail[r.URL.Path] = n - 1
	}
	h.mu.Unlock()
	if n > 0 {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	switch {
	case len(parts) >= 6 && parts[0] == "api" && parts[4] == "revision":
		repo := h.repoFor(parts[1], parts[2], parts[3])
		if repo == nil {
			http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
			return
		}
		if !h.authorized(w, r, repo) {
			return
		}
		sha, ok := repo.branches[parts[5]]
		if !ok && parts[5] == repo.sha {
			sha, ok = repo.sha, true
		}
		if !ok {
			http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"id": parts[2] + "/" + parts[3], "sha": sha, "private": false})
	case len(parts) >= 6 && parts[0] == "api" && parts[4] == "tree":
		repo := h.repoFor(parts[1], parts[2], parts[3])
		if repo == nil || parts[5] != repo.sha {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		if !h.authorized(w, r, repo) {
			return
		}
		h.serveTree(w, r, repo)
	case len(parts) >= 5:
		kindPlural := "models"
		if parts[0] == "datasets" {
			kindPlural, parts = "datasets", parts[1:]
		}
		repo := h.repoFor(kindPlural, parts[0], parts[1])
		if repo == nil || parts[2] != "resolve" || parts[3] != repo.sha {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if !h.authorized(w, r, repo) {
			return
		}
		p := strings.Join(parts[4:], "/")
		body, ok := repo.files[p]
		if !ok {
			http.Error(w, "Entry not found", http.StatusNotFound)
			return
		}
		w.Header().Set("X-Repo-Commit", repo.sha)
		if repo.lfs[p] {
			w.Header().Set("X-Linked-Etag", `"`+sha256hex(body)+`"`)
			w.Header().Set("X-Linked-Size", strconv.Itoa(len(body)))
			http.Redirect(w, r, h.cdn.URL+"/repos/"+sha256hex(body)+"?path="+p+"&key="+kindPlural+"/"+parts[0]+"/"+parts[1], http.StatusFound)
			return
		}
		h.serveBytes(w, r, p, body)
	default:
		http.NotFound(w, r)
	}
}

func (h *fakeHub) serveTree(w http.ResponseWriter, r *http.Request, repo *fakeRepo) {
	var paths []string
	dirs := map[string]bool{}
	for p := range repo.files {
		paths = append(paths, p)
		for d := p; strings.Contains(d, "/"); {
			d = d[:strings.LastIndex(d, "/")]
			dirs[d] = true
		}
	}
	for d := range dirs {
		paths = append(paths, d)
	}
	sort.Strings(paths)
	type lfs struct {
		OID         string `json:"oid"`
		Size        int    `json:"size"`
		PointerSize int    `json:"pointerSize"`
	}
	type entry struct {
		Type string `json:"type"`
		OID  string `json:"oid"`
		Size int    `json:"size"`
		Path string `json:"path"`
		LFS  *lfs   `json:"lfs,omitempty"`
	}
	var all []entry
	for _, p := range paths {
		if dirs[p] {
			all = append(all, entry{Type: "directory", OID: strings.Repeat("d", 40), Path: p})
			continue
		}
		b := repo.files[p]
		e := entry{Type: "file", Size: len(b), Path: p}
		if repo.lfs[p] {
			// The git object of an LFS file is its pointer, not its bytes.
			e.OID = gitOID([]byte("version https://git-lfs.github.com/spec/v1\noid sha256:" + sha256hex(b)))
			e.LFS = &lfs{OID: sha256hex(b), Size: len(b), PointerSize: 134}
		} else {
			e.OID = gitOID(b)
		}
		all = append(all, e)
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	end := min(start+h.pageSize, len(all))
	if end < len(all) {
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?recursive=true&cursor=%d>; rel="next"`, h.api.URL, r.URL.Path, end))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(all[start:end])
}

func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.log(r)
	if a := r.Header.Get("Authorization"); a != "" {
		h.t.Errorf("CDN got Authorization %q: the token must not leave the hub", a)
	}
	if rg := r.Header.Get("Range"); rg != "" {
		h.mu.Lock()
		h.ranges = append(h.ranges, rg)
		h.mu.Unlock()
	}
	key := r.URL.Query().Get("key")
	repo := h.repos[key]
	if repo == nil {
		http.NotFound(w, r)
		return
	}
	p := r.URL.Query().Get("path")
	h.serveBytes(w, r, p, repo.files[p])
}

// serveBytes answers a file request with Range support and the faults set
// for that path.
func (h *fakeHub) serveBytes(w http.ResponseWriter, r *http.Request, p string, body []byte) {
	h.mu.Lock()
	cut, cutOK := h.truncate[p]
	delete(h.truncate, p)
	bad := h.corrupt[p]
	noRange := h.noRange
	h.mu.Unlock()
	if bad {
		body = bytes.Clone(body)
		body[len(body)/2] ^= 0xff
	}
	if noRange {
		r.Header.Del("Range")
	}
	if cutOK {
		// Promise the whole file, send part of it, and drop the connection.
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body[:cut])
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
			}
		}
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// client points a hub client at the fake, with an empty cache and no waits.
func (h *fakeHub) client(t *testing.T, env map[string]string) (*Client, *[]time.Duration) {
	env = mergeEnv(env, map[string]string{"HF_ENDPOINT": h.api.URL, "UDGAM_CI_CACHE": t.TempDir()})
	c := New(func(k string) string { return env[k] })
	var slept []time.Duration
	c.Sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	return c, &slept
}

func mergeEnv(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range b {
		out[k] = v
	}
	for k, v := range a {
		out[k] = v
	}
	return out
}
