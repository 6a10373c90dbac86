package hubtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// found is what a URL names: a repository's gate and one of its commits.
type found struct {
	token string
	sha   string  // "" when the revision is unknown
	c     *commit // nil when sha holds no files: only a branch may point there
}

// find looks up repository key ("models/OWNER/NAME") at rev, a commit sha,
// or also a branch when branches is set: only the revision API resolves
// branches, the tree and file URLs the client builds carry commits.
func (h *Hub) find(key, rev string, branches bool) (found, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[key]
	if r == nil {
		return found{}, false
	}
	f := found{token: r.token}
	if c := r.commits[rev]; c != nil {
		f.sha, f.c = rev, c
	} else if sha, ok := r.branches[rev]; ok && branches {
		f.sha, f.c = sha, r.commits[sha]
	}
	return f, true
}

func (h *Hub) log(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests = append(h.requests, r.Method+" "+r.URL.Path)
}

// failing reports whether a request for urlPath is to get a 500, counting
// it off.
func (h *Hub) failing(urlPath string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail[urlPath] > 0 {
		h.fail[urlPath]--
		return true
	}
	return false
}

func (h *Hub) serveAPI(w http.ResponseWriter, r *http.Request) {
	h.log(r)
	if r.Header.Get("User-Agent") == "" {
		h.t.Errorf("%s: no User-Agent", r.URL)
	}
	if h.failing(r.URL.Path) {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 6 && parts[0] == "api" && parts[4] == "revision":
		key := strings.Join(parts[1:4], "/")
		f, ok := h.find(key, parts[5], true)
		if !h.allowed(w, r, f, ok, parts[5]) {
			return
		}
		writeJSON(w, map[string]any{"id": parts[2] + "/" + parts[3], "sha": f.sha, "private": false})
	case len(parts) >= 6 && parts[0] == "api" && parts[4] == "tree":
		f, ok := h.find(strings.Join(parts[1:4], "/"), parts[5], false)
		if !h.allowed(w, r, f, ok, parts[5]) {
			return
		}
		h.serveTree(w, r, f.c)
	default:
		kind := "models"
		if parts[0] == "datasets" {
			kind, parts = "datasets", parts[1:]
		}
		if len(parts) < 5 || parts[2] != "resolve" {
			hubError(w, http.StatusNotFound, "", "Not Found")
			return
		}
		key := kind + "/" + parts[0] + "/" + parts[1]
		f, ok := h.find(key, parts[3], false)
		if !h.allowed(w, r, f, ok, parts[3]) {
			return
		}
		p := strings.Join(parts[4:], "/")
		body, ok := f.c.files[p]
		if !ok {
			w.Header().Set("X-Repo-Commit", f.sha)
			hubError(w, http.StatusNotFound, "EntryNotFound", "Entry not found")
			return
		}
		w.Header().Set("X-Repo-Commit", f.sha)
		// huggingface_hub refuses a file without an ETag: the git blob id
		// of the file, or of an LFS file's pointer with the content's
		// sha256 in X-Linked-Etag.
		if f.c.lfs[p] {
			w.Header().Set("ETag", `"`+GitOID(lfsPointer(body))+`"`)
			w.Header().Set("X-Linked-Etag", `"`+SHA256(body)+`"`)
			w.Header().Set("X-Linked-Size", strconv.Itoa(len(body)))
			q := url.Values{"key": {key}, "rev": {f.sha}, "path": {p}}
			http.Redirect(w, r, h.CDN.URL+"/repos/"+SHA256(body)+"?"+q.Encode(), http.StatusFound)
			return
		}
		w.Header().Set("ETag", `"`+GitOID(body)+`"`)
		h.serveBytes(w, r, p, body)
	}
}

// allowed answers as the hub does, with the X-Error-Code huggingface_hub
// sorts its errors by: an unknown repository is 401 to an anonymous
// request (the hub does not tell it from a private one) and 404 to a
// token; a gated one is 401 without a token and 403 with another's; an
// unknown revision rev is 404. It reports whether the request may go on.
func (h *Hub) allowed(w http.ResponseWriter, r *http.Request, f found, ok bool, rev string) bool {
	auth := r.Header.Get("Authorization")
	switch {
	case !ok && auth == "":
		hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository not found")
	case !ok:
		hubError(w, http.StatusNotFound, "RepoNotFound", "Repository not found")
	case f.token != "" && auth == "":
		hubError(w, http.StatusUnauthorized, "GatedRepo", "Access to this resource is restricted. You must be authenticated.")
	case f.token != "" && auth != "Bearer "+f.token:
		hubError(w, http.StatusForbidden, "GatedRepo", "Access to this resource is restricted and you are not in the authorized list.")
	case f.sha == "":
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
	default:
		return true
	}
	return false
}

// serveTree lists a commit recursively, directories included, PageSize
// entries a page with a Link header to the next, as the hub does.
func (h *Hub) serveTree(w http.ResponseWriter, r *http.Request, c *commit) {
	var paths []string
	dirs := map[string]bool{}
	for p := range c.files {
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
		b := c.files[p]
		e := entry{Type: "file", Size: len(b), Path: p}
		if c.lfs[p] {
			// The git object of an LFS file is its pointer, not its bytes.
			e.OID = GitOID(lfsPointer(b))
			e.LFS = &lfs{OID: SHA256(b), Size: len(b), PointerSize: len(lfsPointer(b))}
		} else {
			e.OID = GitOID(b)
		}
		all = append(all, e)
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	start = min(max(start, 0), len(all))
	end := min(start+max(h.PageSize, 1), len(all))
	if end < len(all) {
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?recursive=true&cursor=%d>; rel="next"`, h.URL, r.URL.Path, end))
	}
	writeJSON(w, all[start:end])
}

func (h *Hub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.log(r)
	if a := r.Header.Get("Authorization"); a != "" {
		h.t.Errorf("CDN got Authorization %q: the token must not leave the hub", a)
	}
	if rg := r.Header.Get("Range"); rg != "" {
		h.mu.Lock()
		h.ranges = append(h.ranges, rg)
		h.mu.Unlock()
	}
	q := r.URL.Query()
	p := q.Get("path")
	var body []byte
	ok := false
	if f, _ := h.find(q.Get("key"), q.Get("rev"), false); f.c != nil {
		body, ok = f.c.files[p]
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.serveBytes(w, r, p, body)
}

// serveBytes answers a file request with Range support and the faults set
// for that file.
func (h *Hub) serveBytes(w http.ResponseWriter, r *http.Request, p string, body []byte) {
	h.mu.Lock()
	cut, cutOK := h.truncate[p]
	delete(h.truncate, p)
	bad := h.corrupt[p]
	noRange := h.noRange
	h.mu.Unlock()
	if bad && len(body) > 0 {
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
		w.Write(body[:min(cut, len(body))])
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
			}
		}
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// hubError answers an error as the hub does: the reason in the JSON body
// and in X-Error-Message, its kind in X-Error-Code when it has one.
func hubError(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\"error\":%q}\n", msg)
}

// lfsPointer is the git object an LFS file is stored as.
func lfsPointer(b []byte) []byte {
	return []byte(fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", SHA256(b), len(b)))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
