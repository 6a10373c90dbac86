// Package hubtest is a fake Hugging Face hub for tests, speaking the hub's
// URLs and JSON: revision info, paginated tree listings, and file downloads
// that redirect LFS files to a separate "CDN" server (as the real hub does
// with a 302), with Range support, gated repositories and faults to inject.
//
// It does not import hub, so that package's own tests can use it.
package hubtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Hub is a fake hub. The embedded server is the hub itself: its URL is the
// HF_ENDPOINT, and closing it takes the hub offline while the CDN stays up.
type Hub struct {
	*httptest.Server
	CDN *httptest.Server // where LFS downloads are redirected

	// PageSize is the number of tree entries per page. It is small by
	// default so that every listing goes through Link pagination.
	PageSize int

	t        testing.TB
	mu       sync.Mutex
	repos    map[string]*Repo // "models/OWNER/NAME" or "datasets/OWNER/NAME"
	requests []string         // "METHOD path" of every request, both servers
	ranges   []string         // Range headers the CDN received, in order
	fail     map[string]int   // URL path -> number of 500s still to answer
	truncate map[string]int   // file path -> bytes to send before cutting the body, once
	corrupt  map[string]bool  // file path -> flip a byte of the body
	noRange  bool             // answer Range requests with the whole file (200)
}

// New starts a fake hub and its CDN; both stop when the test ends.
func New(t testing.TB) *Hub {
	h := &Hub{t: t, PageSize: 2, repos: map[string]*Repo{},
		fail: map[string]int{}, truncate: map[string]int{}, corrupt: map[string]bool{}}
	h.CDN = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.Server = httptest.NewServer(http.HandlerFunc(h.serveAPI))
	t.Cleanup(func() { h.Close(); h.CDN.Close() })
	return h
}

// Requests returns "METHOD path" of every request so far, both servers,
// in order.
func (h *Hub) Requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.requests...)
}

// Count returns how many requests so far start with prefix ("GET /api/").
func (h *Hub) Count(prefix string) int {
	n := 0
	for _, r := range h.Requests() {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

// Ranges returns the Range headers the CDN received, in order.
func (h *Hub) Ranges() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ranges...)
}

// Fail makes the next n requests for urlPath on the hub answer 500.
func (h *Hub) Fail(urlPath string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fail[urlPath] = n
}

// Truncate makes the next download of file promise the whole file, send
// its first n bytes and drop the connection.
func (h *Hub) Truncate(file string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.truncate[file] = n
}

// Corrupt sets whether downloads of file come with a byte flipped.
func (h *Hub) Corrupt(file string, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.corrupt[file] = on
}

// IgnoreRange makes downloads answer Range requests with the whole file,
// as some proxies do.
func (h *Hub) IgnoreRange() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noRange = true
}
