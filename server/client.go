package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// Client talks to a report server: uploads runs and fetches baselines.
type Client struct {
	BaseURL string       // e.g. https://evals.example.org
	Token   string       // upload token; also needed to read a private server
	HTTP    *http.Client // http.DefaultClient if nil
}

// ErrNotFound is returned when the server has no such run or baseline.
var ErrNotFound = errors.New("not found on the report server")

// StatusError is any other non-2xx answer.
type StatusError struct {
	Code int
	Msg  string // the server's {"error": ...}, or the start of its body
}

func (e *StatusError) Error() string { return fmt.Sprintf("report server: %d %s", e.Code, e.Msg) }

// Upload posts one run file (JSON Lines, or gzip of it); the server checks
// its settings against its own choice of baseline.
func (c *Client) Upload(ctx context.Context, body io.Reader) (UploadResult, error) {
	return c.UploadWith(ctx, body, UploadOptions{})
}

// UploadWith is Upload naming the baseline the settings are checked against.
func (c *Client) UploadWith(ctx context.Context, body io.Reader, opt UploadOptions) (UploadResult, error) {
	q := url.Values{}
	if opt.Baseline != "" {
		q.Set("baseline", opt.Baseline)
	}
	if opt.BaseRef != "" {
		q.Set("base_ref", opt.BaseRef)
	}
	u := "/api/v1/runs"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var res UploadResult
	resp, err := c.do(ctx, http.MethodPost, u, body)
	if err != nil {
		return res, fmt.Errorf("upload: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return res, fmt.Errorf("upload: read answer: %w", err)
	}
	// A server without --public-url answers paths: they are on BaseURL.
	for _, u := range []*string{&res.URL, &res.BaselineURL, &res.CompareURL} {
		if strings.HasPrefix(*u, "/") {
			*u = strings.TrimSuffix(c.BaseURL, "/") + *u
		}
	}
	return res, nil
}

// UploadOptions name the baseline of an upload.
type UploadOptions struct {
	Baseline string // a stored run id
	BaseRef  string // or the newest run on this ref (the server's base branch if empty)
}

// Run fetches one stored run without its records.
func (c *Client) Run(ctx context.Context, id string) (*store.Run, error) {
	var r store.Run
	if err := c.getJSON(ctx, "/api/v1/runs/"+url.PathEscape(id), &r); err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	return &r, nil
}

// RunFile fetches a stored run with its records.
func (c *Client) RunFile(ctx context.Context, id string) (*runfile.Run, error) {
	resp, err := c.do(ctx, http.MethodGet, "/api/v1/runs/"+url.PathEscape(id)+"/records", nil)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	defer resp.Body.Close()
	r, err := runfile.Read(resp.Body, c.BaseURL+" run "+id)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Baseline fetches the newest run of a repository's model and test on ref,
// records and all. It returns an error wrapping ErrNotFound when there is
// none.
func (c *Client) Baseline(ctx context.Context, repo, model, ref, test string) (*runfile.Run, error) {
	if err := store.ValidRepo(repo); err != nil {
		return nil, fmt.Errorf("baseline of %s: %w", model, err)
	}
	var r store.Run
	u := "/api/v1" + modelPath(repo, model) + "/baseline?" + url.Values{"ref": {ref}, "test": {test}}.Encode()
	if err := c.getJSON(ctx, u, &r); err != nil {
		return nil, fmt.Errorf("baseline of %s in %s (%s on %s): %w", model, repo, test, ref, err)
	}
	return c.RunFile(ctx, r.ID)
}

func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("read answer of %s: %w", path, err)
	}
	return nil
}

// do sends a request and turns a non-2xx answer into an error.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	base := strings.TrimSuffix(c.BaseURL, "/")
	if base == "" {
		return nil, errors.New("no report server URL")
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return nil, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-ndjson")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var ae apiError
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &ae) == nil && ae.Error != "" {
		msg = ae.Error
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, msg)
	}
	return nil, &StatusError{Code: resp.StatusCode, Msg: msg}
}
