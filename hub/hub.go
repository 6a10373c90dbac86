// Package hub is a small client for the Hugging Face hub's HTTP API: it
// resolves a branch or tag to its commit, lists a repository's files at a
// commit, and downloads files into a verified, resumable local cache. It
// speaks the same URLs as the huggingface_hub Python library, so HF_ENDPOINT
// can point it at a mirror or, in tests, at an httptest server.
package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/udgamlabs/udgam-ci/internal/retry"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// DefaultEndpoint is the public hub.
const DefaultEndpoint = "https://huggingface.co"

// Kind is a repository type. Models and datasets live under different URL
// prefixes on the hub.
type Kind string

const (
	Model   Kind = "model"
	Dataset Kind = "dataset"
)

// Client talks to one hub endpoint. Build it with New; every field may be
// changed afterwards (tests swap HTTP, Sleep and Now).
type Client struct {
	Endpoint  string // base URL, no trailing slash
	Token     string // sent as "Authorization: Bearer ..." when set
	HTTP      *http.Client
	CacheDir  string // root of the download cache
	UserAgent string
	Progress  io.Writer // progress lines for downloads; nil for none
	Offline   bool      // answer from the cache only (HF_HUB_OFFLINE=1)

	// Retries is how many times a request is retried after a 5xx, a 429 or
	// a broken connection; Sleep waits between tries (injected so tests run
	// instantly) and Now paces progress lines.
	Retries int
	Sleep   func(ctx context.Context, d time.Duration) error
	Now     func() time.Time
}

// New builds a client from the environment:
//
//	HF_ENDPOINT        hub base URL (default https://huggingface.co)
//	HF_TOKEN           access token (HUGGING_FACE_HUB_TOKEN is read too)
//	HF_HUB_OFFLINE     1 (or true, yes): no requests, the cache only
//	UDGAM_CI_CACHE     cache root; else $XDG_CACHE_HOME/udgam-ci/hub,
//	                   else $HOME/.cache/udgam-ci/hub
//
// The cache is the project's own (not huggingface_hub's layout), keyed by
// repository type, repository, commit and path.
func New(getenv func(string) string) *Client {
	endpoint := strings.TrimRight(getenv("HF_ENDPOINT"), "/")
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	token := getenv("HF_TOKEN")
	if token == "" {
		token = getenv("HUGGING_FACE_HUB_TOKEN")
	}
	return &Client{
		Endpoint:  endpoint,
		Token:     token,
		HTTP:      &http.Client{},
		CacheDir:  cacheDir(getenv),
		Offline:   isTrue(getenv("HF_HUB_OFFLINE")),
		UserAgent: "udgam-ci (+https://github.com/udgamlabs/udgam-ci)",
		Retries:   5,
		Sleep:     retry.Sleep,
		Now:       time.Now,
	}
}

func cacheDir(getenv func(string) string) string {
	if d := getenv("UDGAM_CI_CACHE"); d != "" {
		return d
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "udgam-ci", "hub")
	}
	if d := getenv("HOME"); d != "" {
		return filepath.Join(d, ".cache", "udgam-ci", "hub")
	}
	return filepath.Join(".cache", "udgam-ci", "hub")
}

func isTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// ErrOffline is returned for anything the cache cannot answer when the
// client is offline.
var ErrOffline = errors.New("not in the cache, and HF_HUB_OFFLINE forbids the network")

func checkRepo(repo string) error {
	if !runfile.IsHubRepo(repo) {
		return fmt.Errorf("repository %q: want OWNER/NAME", repo)
	}
	return nil
}

// StatusError is a hub answer that is not a success, kept so callers can
// tell "not found" from "needs a token".
type StatusError struct {
	URL    string
	Status int
	Code   string // X-Error-Code: RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo
	Body   string // the start of the body: the hub puts its reason there
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("GET %s: %s", e.URL, http.StatusText(e.Status))
	// The hub answers 401 to an anonymous request for a repository that
	// does not exist as for a private one; its error code tells them apart.
	switch {
	case e.Code == "RepoNotFound":
		msg += " (no such repository, or a private one: check the name, or set HF_TOKEN to a token with access)"
	case e.Code == "GatedRepo":
		msg += " (gated repository: accept its conditions on the hub and set HF_TOKEN to a token with access)"
	case e.Status == http.StatusUnauthorized, e.Status == http.StatusForbidden:
		msg += " (private or gated repository: set HF_TOKEN to a token with access)"
	case e.Status == http.StatusNotFound:
		msg += " (no such repository, revision or file)"
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// apiURL is an API URL about a repository.
func (c *Client) apiURL(kind Kind, repo string, parts ...string) string {
	u := c.Endpoint + "/api/" + string(kind) + "s/" + repo
	for _, p := range parts {
		u += "/" + p
	}
	return u
}

// fileURL is where the hub serves a file's bytes at a revision.
func (c *Client) fileURL(kind Kind, repo, rev, path string) string {
	prefix := ""
	if kind == Dataset {
		prefix = "datasets/"
	}
	return c.Endpoint + "/" + prefix + repo + "/resolve/" + url.PathEscape(rev) + "/" + escapePath(path)
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

func (c *Client) newRequest(ctx context.Context, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return req, nil
}

// do sends a GET built by mk, retrying on connection errors, 429 and 5xx.
// The caller closes the body of the successful response it gets back.
func (c *Client) do(ctx context.Context, u string, mk func(*http.Request)) (*http.Response, error) {
	// The hub answers file downloads with a redirect to a CDN whose URL is
	// already signed: the token must stay with the hub's own host and port.
	hc := *c.HTTP
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if req.URL.Host != via[0].URL.Host {
			req.Header.Del("Authorization")
		}
		return nil
	}
	if c.Offline {
		return nil, fmt.Errorf("GET %s: %w", u, ErrOffline)
	}
	var last error
	for attempt := 0; ; attempt++ {
		req, err := c.newRequest(ctx, u)
		if err != nil {
			return nil, err
		}
		if mk != nil {
			mk(req)
		}
		resp, err := hc.Do(req)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			last = err
			wait = retry.Backoff(attempt, nil, c.Now())
		case resp.StatusCode < 300:
			return resp, nil
		default:
			serr := statusError(u, resp)
			if !retry.Retryable(resp.StatusCode) {
				return nil, serr
			}
			last = serr
			wait = retry.Backoff(attempt, resp.Header, c.Now())
		}
		if attempt >= c.Retries {
			return nil, fmt.Errorf("after %d tries: %w", attempt+1, last)
		}
		if err := c.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// statusError reads a little of a failed response for its message and
// closes it.
func statusError(u string, resp *http.Response) error {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	body := strings.TrimSpace(string(b))
	var j struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &j) == nil && j.Error != "" {
		body = j.Error
	}
	return &StatusError{URL: u, Status: resp.StatusCode, Code: resp.Header.Get("X-Error-Code"), Body: body}
}

// getJSON fetches u and decodes its JSON body into v, returning the
// response headers (for Link pagination).
func (c *Client) getJSON(ctx context.Context, u string, v any) (http.Header, error) {
	resp, err := c.do(ctx, u, func(r *http.Request) { r.Header.Set("Accept", "application/json") })
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return nil, fmt.Errorf("GET %s: decode: %w", u, err)
	}
	return resp.Header, nil
}

// ErrNotFound is matched by errors.Is for a 404 from the hub, for the
// hub's not-found codes (an unknown repository is 401 to an anonymous
// request), and for a file the listing lacks.
var ErrNotFound = errors.New("not found")

func (e *StatusError) Is(target error) bool {
	if target != ErrNotFound {
		return false
	}
	switch e.Code {
	case "RepoNotFound", "RevisionNotFound", "EntryNotFound":
		return true
	}
	return e.Status == http.StatusNotFound
}
