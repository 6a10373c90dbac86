package server

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// upload stores one run file. Every check happens before the single write
// transaction, so a refused upload leaves the database as it was. The body
// is parsed as it arrives: what an upload holds in memory is its parsed
// records (at most MaxRecords) and their stored lines, never the raw body.
func (s *Server) upload(c echo.Context) error {
	ctx := c.Request().Context()
	// The token comes from the headers: checked before a byte of the body
	// is read, and the body then has BodyTimeout to arrive.
	tok, release, err := s.startUpload(c)
	if err != nil {
		return err
	}
	defer release()
	run, err := s.readRun(c)
	if err != nil {
		return err
	}
	opt := store.PutOptions{BaseRef: c.QueryParam("base_ref"), BaselineID: c.QueryParam("baseline")}
	if opt.BaseRef == "" {
		opt.BaseRef = s.cfg.BaseRef
	}
	checked, err := checkRun(s.store, run, opt)
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	if run.Header.Git.Repo != tok.Repo {
		return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("this token uploads runs of %s only; run %s is from %s", tok.Repo, run.Header.ID, run.Header.Git.Repo))
	}
	res, err := ingest(ctx, s.store, checked)
	if err != nil {
		return err
	}
	r := res.Run
	if res.Created && r.BaselineID != "" {
		s.queueDelta(r.ID, r.BaselineID)
	}
	if res.Created {
		s.queueAnchorDelta(ctx, &r)
	}
	out := client.UploadResult{
		ID: r.ID, URL: s.absURL(runPath(r.ID)), Created: res.Created, Test: r.Test, Repo: r.Repo, Model: r.Model,
		Score: wireScore(r.Score), BaselineID: r.BaselineID, Flags: r.Flags,
	}
	if r.BaselineID != "" {
		out.BaselineURL = s.absURL(runPath(r.BaselineID))
		out.CompareURL = s.absURL(comparePath(r.BaselineID, r.ID))
	}
	s.log.Info("run stored", "id", r.ID, "created", res.Created, "model", r.Model, "test", r.Test,
		"records", r.Records, "baseline", r.BaselineID, "flags", len(r.Flags))
	code := http.StatusCreated
	if !res.Created {
		code = http.StatusOK
	}
	return c.JSON(code, out)
}

// readRun parses the upload as it arrives, gunzipping it when it is gzip,
// with the size limit applied before and after decompression and the
// record limit at the first record over it. runfile.Read refuses records
// with unknown fields, so probe items never pass as empty documents.
func (s *Server) readRun(c echo.Context) (*runfile.Run, error) {
	body, gz, tooBig, err := s.openBody(c, s.cfg.MaxBody)
	if err != nil {
		return nil, err
	}
	run, err := runfile.ReadWith(body, "upload", runfile.Options{
		MaxRecords: s.cfg.MaxRecords,
		Limit:      fmt.Sprintf("the most this server takes (it compares runs of up to %d records; compare bigger runs with udgam-ci compare)", s.cfg.MaxRecords),
	})
	if err != nil {
		return nil, s.bodyError(err, gz, tooBig)
	}
	return run, nil
}

// openBody is an upload's body as it arrives, gunzipped when it is gzip,
// refused past limit bytes before and after decompression: reading it
// past the limit fails with an error bodyError maps to tooBig.
func (s *Server) openBody(c echo.Context, limit int64) (body io.Reader, gz bool, tooBig, err error) {
	req := c.Request()
	tooBig = echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("upload is over the limit of %d bytes", limit))
	if req.ContentLength > limit {
		return nil, false, tooBig, tooBig
	}
	br := bufio.NewReader(http.MaxBytesReader(c.Response(), req.Body, limit))
	body = br
	magic, _ := br.Peek(2)
	gz = strings.Contains(req.Header.Get("Content-Encoding"), "gzip") || bytes.Equal(magic, []byte{0x1f, 0x8b})
	if gz {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, gz, tooBig, s.bodyError(err, gz, tooBig)
		}
		body = &limitedReader{r: zr, left: limit}
	}
	return body, gz, tooBig, nil
}

// startUpload is what every upload does before its body is read: the
// token from the headers, a place among the uploads read at once, and
// BodyTimeout for the body to arrive.
func (s *Server) startUpload(c echo.Context) (store.Token, func(), error) {
	tok, err := s.bearer(c)
	if err != nil {
		return tok, nil, err
	}
	release, err := s.uploads.acquire(c.Request().Context(), tok.ID)
	if err != nil {
		return tok, nil, err
	}
	// A writer with no connection under it (an in-process test harness)
	// cannot take a deadline; every net/http connection can.
	err = http.NewResponseController(c.Response()).SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		release()
		return tok, nil, fmt.Errorf("upload: set read deadline: %w", err)
	}
	return tok, release, nil
}

// bodyError maps an error met reading the upload to its answer.
func (s *Server) bodyError(err error, gz bool, tooBig error) error {
	var mbe *http.MaxBytesError
	var tm *runfile.TooManyError
	var corrupt flate.CorruptInputError
	switch {
	case errors.As(err, &mbe), errors.Is(err, errInflatedTooBig):
		return tooBig
	case errors.As(err, &tm):
		return echo.NewHTTPError(http.StatusRequestEntityTooLarge, err.Error())
	case errors.Is(err, os.ErrDeadlineExceeded):
		return echo.NewHTTPError(http.StatusRequestTimeout, fmt.Sprintf("upload body not received within %s", s.cfg.BodyTimeout))
	case gz && (errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &corrupt)):
		return badRequest("upload: not valid gzip: %v", err)
	}
	return echo.NewHTTPError(http.StatusBadRequest, err.Error())
}

var errInflatedTooBig = errors.New("upload is over the size limit once gunzipped")

// limitedReader fails once more than left bytes were read (io.LimitReader
// would end quietly, and a cut run file could parse whole).
type limitedReader struct {
	r    io.Reader
	left int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, errInflatedTooBig
	}
	return n, err
}

// bearer checks the upload token.
func (s *Server) bearer(c echo.Context) (store.Token, error) {
	secret := tokenOf(c.Request())
	if secret == "" {
		return store.Token{}, echo.NewHTTPError(http.StatusUnauthorized, "a token is needed: Authorization: Bearer TOKEN (made by udgam-ci server token create)")
	}
	tok, err := s.store.CheckToken(c.Request().Context(), secret)
	if errors.Is(err, store.ErrBadToken) {
		return store.Token{}, echo.NewHTTPError(http.StatusUnauthorized, "unknown or revoked token")
	}
	return tok, err
}

// tokenOf takes the token from a bearer header, or from basic auth's
// password (what a browser sends for a private server's pages).
func tokenOf(r *http.Request) string {
	if _, pw, ok := r.BasicAuth(); ok {
		return pw
	}
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// requireReader lets reads through on a public server, and on a private
// one only with a live token, which then reads its own repository only.
func (s *Server) requireReader(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Private {
			tok, err := s.bearer(c)
			if err != nil {
				return err
			}
			c.Set(scopeKey, tok.Repo)
		}
		return next(c)
	}
}

const scopeKey = "udgam-ci.repo"

// scope is the one repository a request may read: the token's on a
// private server, "" (all of them) on a public one.
func (s *Server) scope(c echo.Context) string {
	repo, _ := c.Get(scopeKey).(string)
	return repo
}

// absURL makes a server path absolute when the server knows its public
// URL; otherwise the path stays relative: a Host header is the client's to
// choose and must not end up in links.
func (s *Server) absURL(path string) string {
	return s.cfg.PublicURL + path
}
