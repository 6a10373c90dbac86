// Package server is udgam-ci's report server: it stores uploaded run files
// in SQLite (package store), flags runs whose settings differ from their
// baseline's, serves a JSON API under /api/v1 and draws history pages.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// DefaultMaxBody bounds an upload; a full fresh-text or probe run is well
// under a megabyte, so this leaves room for far larger data sets.
const DefaultMaxBody = 64 << 20

// Config is what a Server needs.
type Config struct {
	Store  *store.Store
	Logger *slog.Logger
	// MaxBody bounds an upload, compressed and decompressed; 0 means
	// DefaultMaxBody.
	MaxBody int64
	// Private makes pages and GET APIs need a token too.
	Private bool
	// BaseRef is the branch runs are checked against; runfile.DefaultBaseRef if empty.
	BaseRef string
	// PublicURL prefixes the run URLs returned by uploads; if empty they
	// are paths, which Client resolves against its BaseURL (never built
	// from the request's Host header, which the client chooses).
	PublicURL string
	// TrustProxy takes the client address logged from X-Forwarded-For, as
	// set by a reverse proxy on a private network or loopback; otherwise
	// the header is ignored and the connection's address is logged.
	TrustProxy bool
	// ShutdownTimeout bounds how long Serve waits for in-flight requests
	// once asked to stop; 0 means 30 seconds.
	ShutdownTimeout time.Duration
	// CompareResamples is the bootstrap size of /compare; 0 means the
	// report package's default.
	CompareResamples int
	// MaxRecords bounds the records of one run: an upload is refused at
	// the first record over it, and /compare refuses runs over it stored
	// before; 0 means DefaultMaxRecords.
	MaxRecords int
	// MaxUploads bounds the uploads read at once, and MaxUploadsPerToken
	// those of one token; 0 means DefaultMaxUploads and
	// DefaultMaxUploadsPerToken. One more waits, its body unread, up to
	// UploadWait (0: DefaultUploadWait), then is answered 429 (its token's
	// own uploads) or 503 (the server's), with Retry-After.
	MaxUploads, MaxUploadsPerToken int
	UploadWait                     time.Duration
	// CompareTimeout bounds one /compare, waiting for a slot included; 0
	// means DefaultCompareTimeout.
	CompareTimeout time.Duration
	// BodyTimeout bounds how long an authenticated upload may take to
	// send its body; 0 means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// MaxAuditBody bounds an artifact audit's upload, compressed and
	// gunzipped; 0 means DefaultMaxAuditBody.
	MaxAuditBody int64
	// AuditLimits are the limits this server judges artifact audits
	// under (nil: audit.DefaultLimits); an uploader's own, when they
	// differ, are shown as the uploader's claim, never as the verdict.
	AuditLimits *audit.Limits
	// Webhook, when its URL is set, receives the server's events
	// (webhook.go).
	Webhook Webhook
}

// DefaultBodyTimeout lets a DefaultMaxBody upload arrive at about 0.5 MB/s.
const DefaultBodyTimeout = 2 * time.Minute

// Server serves the API and pages.
type Server struct {
	cfg   Config
	store *store.Store
	log   *slog.Logger
	echo  *echo.Echo
	pages *pages

	compares     *lru[compareKey, *compare.Comparison]
	runSummaries *lru[string, *probes.Summary] // by run id
	compareSlots chan struct{}                 // bootstraps of the default resamples and seed running now
	customSlots  chan struct{}                 // bootstraps of other resamples or seeds running now
	uploads      *uploadLimiter
	pageCache    *pageCache
	deltas       chan deltaJob            // change intervals to compute (deltaWorker)
	deltaWG      sync.WaitGroup           // queued and not yet done
	hooks        chan client.WebhookEvent // events to post; nil without a webhook
}

// New builds a Server; it does not listen yet.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: no store")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.BaseRef == "" {
		cfg.BaseRef = runfile.DefaultBaseRef
	}
	if err := store.ValidRef(cfg.BaseRef); err != nil {
		return nil, fmt.Errorf("server: base ref: %w", err)
	}
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.MaxAuditBody <= 0 {
		cfg.MaxAuditBody = DefaultMaxAuditBody
	}
	if cfg.AuditLimits == nil {
		cfg.AuditLimits = &audit.DefaultLimits
	}
	if cfg.MaxRecords <= 0 {
		cfg.MaxRecords = DefaultMaxRecords
	}
	if cfg.MaxUploads <= 0 {
		cfg.MaxUploads = DefaultMaxUploads
	}
	if cfg.MaxUploadsPerToken <= 0 {
		cfg.MaxUploadsPerToken = DefaultMaxUploadsPerToken
	}
	if cfg.UploadWait <= 0 {
		cfg.UploadWait = DefaultUploadWait
	}
	if cfg.CompareTimeout <= 0 {
		cfg.CompareTimeout = DefaultCompareTimeout
	}
	if err := cfg.Webhook.setDefaults(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, store: cfg.Store, log: cfg.Logger, pages: p,
		compares:     newLRU[compareKey, *compare.Comparison](compareCacheSize),
		runSummaries: newLRU[string, *probes.Summary](runSummaryCacheSize),
		// Each bootstrap already uses every core: two at a time keep the
		// machine busy without letting a crowd of requests queue up work.
		// Comparisons with a resamples or seed of their own (uncached,
		// each new seed new work) get one slot of their own, so a crowd of
		// them never delays the comparisons pages link to.
		compareSlots: make(chan struct{}, 2),
		customSlots:  make(chan struct{}, 1),
		uploads:      newUploadLimiter(cfg.MaxUploads, cfg.MaxUploadsPerToken, cfg.UploadWait),
		pageCache:    newPageCache(pageCacheBytes),
		deltas:       make(chan deltaJob, deltaQueue),
	}
	go s.deltaWorker()
	s.startWebhook()
	s.echo = s.routes()
	return s, nil
}

// Handler is the server's http.Handler (for httptest).
func (s *Server) Handler() http.Handler { return s.echo }

func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	e.IPExtractor = echo.ExtractIPDirect()
	if s.cfg.TrustProxy {
		e.IPExtractor = echo.ExtractIPFromXFFHeader()
	}
	e.Use(s.securityHeaders, s.recoverPanics, s.logRequests)

	e.GET("/healthz", s.health)
	// README images: public or nothing, never behind a token (badge.go).
	e.Match([]string{http.MethodGet, http.MethodHead}, badgePrefix+"/*", s.badge)
	e.Match([]string{http.MethodGet, http.MethodHead}, chartPrefix+"/*", s.chartSVG)

	api := e.Group("/api/v1")
	api.POST("/runs", s.upload)
	api.POST("/audits", s.uploadAudit)
	api.POST("/runs/:id/anchor", s.pinAnchor)
	api.GET("/webhooks/deliveries", s.apiDeliveries) // the token's own
	read := api.Group("", s.requireReader)
	read.GET("/runs/:id", s.apiRun)
	read.GET("/runs/:id/records", s.apiRecords)
	read.GET("/models", s.apiModels)
	read.GET("/models/*", s.apiModel) // model names hold a slash: see client.ModelPath
	read.GET("/repos/*", s.apiModel)
	read.GET("/compare", s.apiCompare)
	read.GET("/audits/:id", s.apiAudit)

	pg := e.Group("", s.requireReader)
	for path, h := range map[string]echo.HandlerFunc{
		"/":           s.cached(s.indexPage),
		"/models/*":   s.cached(s.modelPage),
		"/repos/*":    s.cached(s.modelPage),
		"/runs/:id":   s.runPage,
		"/audits/:id": s.cached(s.auditPage),
		"/compare":    s.comparePage,
	} {
		// HEAD answers as GET does; net/http sends no body.
		pg.Match([]string{http.MethodGet, http.MethodHead}, path, h)
	}
	return e
}

// Serve answers on ln until ctx is cancelled, then stops taking new
// connections and waits for in-flight requests (uploads included) to end,
// and for the change intervals of stored uploads to be stored.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       5 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("serving", "addr", ln.Addr().String(), "db", s.store.Path(), "private", s.cfg.Private)
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down: finishing in-flight requests", "timeout", s.cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	// The change intervals of the last uploads are still stored.
	done := make(chan struct{})
	go func() { s.deltaWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-sctx.Done():
		s.log.Warn("stopped before every change interval was stored: their history rows link the comparison instead")
	}
	s.log.Info("stopped")
	return nil
}

func (s *Server) health(c echo.Context) error {
	if err := s.store.Ping(c.Request().Context()); err != nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "database: "+err.Error())
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// logRequests writes one structured line per request.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err) // write the error response now so its status is logged
		}
		req, res := c.Request(), c.Response()
		level := slog.LevelInfo
		if res.Status >= 500 {
			level = slog.LevelError
		}
		s.log.LogAttrs(req.Context(), level, "request",
			slog.String("method", req.Method),
			slog.String("path", req.URL.Path),
			slog.Int("status", res.Status),
			slog.Int64("bytes_in", req.ContentLength),
			slog.Int64("bytes_out", res.Size),
			slog.Duration("duration", time.Since(start)),
			slog.String("remote", c.RealIP()),
		)
		return nil
	}
}

// securityHeaders go on every response: pages load nothing from elsewhere
// and run no script, so the policy allows only the layout's own inline
// style (by its hash) and same-origin forms; no page may be framed.
func (s *Server) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	csp := "default-src 'none'; style-src '" + s.pages.styleHash + "'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		return next(c)
	}
}

// recoverPanics turns a panic in a handler into a 500, so one bad request
// never takes the server down.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if v := recover(); v != nil {
				s.log.Error("panic in handler", "path", c.Request().URL.Path, "panic", fmt.Sprint(v))
				err = echo.NewHTTPError(http.StatusInternalServerError, "internal error")
			}
		}()
		return next(c)
	}
}

// handleError writes errors as JSON under /api/ and as a page elsewhere.
// Store errors are mapped to their status here so handlers can return them.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, msg := statusOf(err)
	if code >= 500 {
		s.log.Error("request failed", "path", c.Request().URL.Path, "err", err.Error())
	}
	if code == http.StatusInternalServerError { // the server's own fault: details stay in the log
		msg = "internal error"
	}
	if m := c.Request().Method; m != http.MethodGet && m != http.MethodHead {
		// Answer at once and hang up: otherwise net/http first reads what
		// is left of the body (up to 256 KiB) to keep the connection, and
		// a client trickling it holds the connection for the read timeout.
		c.Response().Header().Set("Connection", "close")
	}
	var wh *withHeader
	if errors.As(err, &wh) {
		c.Response().Header().Set(wh.key, wh.val)
	}
	if code == http.StatusUnauthorized && s.cfg.Private && !isAPI(c) {
		// Lets a browser ask for the token (as the password).
		c.Response().Header().Set("WWW-Authenticate", `Basic realm="udgam-ci"`)
	}
	var werr error
	if m := c.Request().Method; isAPI(c) || m != http.MethodGet && m != http.MethodHead {
		werr = c.JSON(code, client.ErrorBody{Error: msg})
	} else {
		werr = s.render(c, code, "error", errorPage{Status: code, Title: http.StatusText(code), Message: msg})
	}
	if werr != nil {
		s.log.Error("write error response", "err", werr.Error())
	}
}

func isAPI(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, "/api/") }

// statusOf maps an error to an HTTP status and a message for the client.
func statusOf(err error) (int, string) {
	var he *echo.HTTPError
	var bb *store.BadBaselineError
	var inv *store.InvalidError
	switch {
	case errors.As(err, &inv):
		return http.StatusBadRequest, err.Error()
	case errors.As(err, &he):
		return he.Code, fmt.Sprint(he.Message)
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, store.ErrConflict):
		return http.StatusConflict, err.Error()
	case errors.Is(err, store.ErrUnreadable):
		return http.StatusUnprocessableEntity, err.Error()
	case errors.Is(err, store.ErrFull):
		return http.StatusInsufficientStorage, "the server's disk is full: the run was not stored (nothing of it was kept); tell the server's operator"
	case errors.As(err, &bb):
		return http.StatusBadRequest, err.Error()
	}
	return http.StatusInternalServerError, err.Error()
}

func badRequest(format string, a ...any) error {
	return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf(format, a...))
}
