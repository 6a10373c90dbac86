package server

import (
	"bytes"
	"container/list"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// Bounds on uploads read at once. Each holds its parsed records (at most
// MaxRecords) and their stored lines while it is checked and written, and
// writes go through one connection anyway: a few at a time keep the writer
// busy, more only add memory. Uploads over a bound wait, their bodies
// unread, up to UploadWait.
const (
	DefaultMaxUploads         = 4
	DefaultMaxUploadsPerToken = 2
	DefaultUploadWait         = 30 * time.Second
	// uploadRetryAfter is the Retry-After of an upload that waited in
	// vain, in seconds.
	uploadRetryAfter = 5
)

// uploadLimiter hands out places to read an upload: first one of the
// token's own, so one token's crowd queues behind itself, then one of the
// server's. The server's last free place goes only to a token holding
// none: tokens that hold places cannot take every one, so a token with
// nothing in flight never waits behind the slow uploads of two others.
type uploadLimiter struct {
	mu       sync.Mutex
	max      int // the server's places
	used     int
	freed    chan struct{} // closed and replaced whenever a place is freed
	perToken int
	byToken  map[int64]*tokenPlaces
	wait     time.Duration
}

type tokenPlaces struct {
	ch    chan struct{}
	users int // requests holding or waiting for a place
	held  int // server places it holds
}

func newUploadLimiter(max, perToken int, wait time.Duration) *uploadLimiter {
	return &uploadLimiter{max: max, freed: make(chan struct{}), perToken: perToken, byToken: map[int64]*tokenPlaces{}, wait: wait}
}

// takes reports whether tp may take a server place now, and takes it.
// Called with l.mu held.
func (l *uploadLimiter) takes(tp *tokenPlaces) bool {
	if l.used >= l.max || tp.held > 0 && l.used+1 >= l.max {
		return false
	}
	l.used++
	tp.held++
	return true
}

// acquire waits for a place for one upload of a token; it answers 429
// when the token's own uploads kept it waiting too long, 503 when the
// server's did.
func (l *uploadLimiter) acquire(ctx context.Context, token int64) (func(), error) {
	l.mu.Lock()
	tp := l.byToken[token]
	if tp == nil {
		tp = &tokenPlaces{ch: make(chan struct{}, l.perToken)}
		l.byToken[token] = tp
	}
	tp.users++
	l.mu.Unlock()
	leave := func() {
		l.mu.Lock()
		if tp.users--; tp.users == 0 {
			delete(l.byToken, token)
		}
		l.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(ctx, l.wait)
	defer cancel()
	select {
	case tp.ch <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, retryLater(http.StatusTooManyRequests, fmt.Sprintf(
			"this token's other uploads (%d at a time) kept this one waiting %s; try again when they have finished", l.perToken, l.wait))
	}
	for {
		l.mu.Lock()
		if l.takes(tp) {
			l.mu.Unlock()
			break
		}
		freed := l.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			<-tp.ch
			leave()
			return nil, retryLater(http.StatusServiceUnavailable, fmt.Sprintf(
				"the server is storing %d uploads, the most it takes at once, and this one waited %s; try again in a few seconds", l.max, l.wait))
		}
	}
	return func() {
		l.mu.Lock()
		l.used--
		tp.held--
		close(l.freed)
		l.freed = make(chan struct{})
		l.mu.Unlock()
		<-tp.ch
		leave()
	}, nil
}

// retryLater is an error answer that tells the client when to retry.
func retryLater(code int, msg string) error {
	he := echo.NewHTTPError(code, msg)
	return &withHeader{HTTPError: he, key: "Retry-After", val: strconv.Itoa(uploadRetryAfter)}
}

// withHeader is an HTTP error whose answer carries one more header.
type withHeader struct {
	*echo.HTTPError
	key, val string
}

func (w *withHeader) Unwrap() error { return w.HTTPError }

// lru keeps the most recently used values up to a total cost, least
// recently used out first.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	cost  func(V) int
	used  int
	order *list.List // of K, most recent first
	items map[K]*list.Element
	vals  map[K]V
}

// newLRU keeps up to max values (each costs 1).
func newLRU[K comparable, V any](max int) *lru[K, V] {
	return newCostLRU[K, V](max, func(V) int { return 1 })
}

func newCostLRU[K comparable, V any](max int, cost func(V) int) *lru[K, V] {
	return &lru[K, V]{max: max, cost: cost, order: list.New(), items: map[K]*list.Element{}, vals: map[K]V{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return c.vals[k], true
}

func (c *lru[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cost(v) > c.max {
		return
	}
	if e, ok := c.items[k]; ok {
		c.used -= c.cost(c.vals[k])
		c.order.MoveToFront(e)
	} else {
		c.items[k] = c.order.PushFront(k)
	}
	c.vals[k] = v
	c.used += c.cost(v)
	for c.used > c.max {
		old := c.order.Remove(c.order.Back()).(K)
		c.used -= c.cost(c.vals[old])
		delete(c.items, old)
		delete(c.vals, old)
	}
}

// pageCacheBytes bounds the rendered pages kept (a 1,000-run history page
// is about 0.7 MB).
const pageCacheBytes = 32 << 20

// pageKey names a rendered page: stored runs never change, so the page of
// a URL, for a reader's scope, is the same until a run is added.
type pageKey struct {
	uri, scope string
	generation int64
}

type pageCache = lru[pageKey, []byte]

func newPageCache(max int) *pageCache {
	return newCostLRU[pageKey, []byte](max, func(b []byte) int { return len(b) })
}

// cached serves a page from the cache while no run was added since it was
// rendered, and keeps what h renders with 200.
func (s *Server) cached(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		gen, err := s.store.Generation(c.Request().Context())
		if err != nil {
			return h(c) // uncached, as it would be without the cache
		}
		key := pageKey{uri: c.Request().URL.RequestURI(), scope: s.scope(c), generation: gen}
		if b, ok := s.pageCache.get(key); ok {
			return c.HTMLBlob(http.StatusOK, b)
		}
		res := c.Response()
		tee := &teeWriter{ResponseWriter: res.Writer}
		res.Writer = tee
		err = h(c)
		res.Writer = tee.ResponseWriter
		if err == nil && res.Status == http.StatusOK {
			s.pageCache.put(key, tee.buf.Bytes())
		}
		return err
	}
}

// teeWriter keeps a copy of what is written.
type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.buf.Write(p)
	return t.ResponseWriter.Write(p)
}
