// Package client speaks the report server's HTTP API: upload a run, fetch
// a run or a baseline. It holds the API's wire types, which the server
// encodes too, so it links neither the server nor its database.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/udgamlabs/udgam-ci/internal/retry"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Client talks to a report server: uploads runs and fetches baselines.
type Client struct {
	BaseURL string       // e.g. https://evals.example.org
	Token   string       // upload token; also needed to read a private server
	HTTP    *http.Client // http.DefaultClient if nil
	// Sleep waits before an upload is sent again; retry.Sleep if nil.
	Sleep func(context.Context, time.Duration) error
}

// uploadRetries is how many times an upload the server was too busy to
// read (429, 503) is sent again, after the wait its Retry-After asks: with
// the server's defaults (30 s of waiting for a place, Retry-After 5 s) an
// upload tolerates about 2 min 15 s of a busy server.
const uploadRetries = 3

// ErrNotFound is returned when the server has no such run or baseline.
var ErrNotFound = errors.New("not found on the report server")

// StatusError is any other non-2xx answer.
type StatusError struct {
	Code   int
	Msg    string      // the server's {"error": ...}, or the start of its body
	Header http.Header // the answer's headers (Retry-After)
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
	resp, err := c.postRetrying(ctx, u, "application/x-ndjson", body)
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

// postRetrying posts body, and again while the server answers that it is
// too busy to read it: an upload is idempotent (the same run again is a
// no-op), and a busy server asks for a retry only after a wait.
func (c *Client) postRetrying(ctx context.Context, path, contentType string, body io.Reader) (*http.Response, error) {
	var whole []byte
	if rs, ok := body.(io.ReadSeeker); !ok || rs == nil {
		b, err := io.ReadAll(body)
		if err != nil {
			return nil, fmt.Errorf("read the run: %w", err)
		}
		whole = b
	}
	sleep := c.Sleep
	if sleep == nil {
		sleep = retry.Sleep
	}
	for attempt := 0; ; attempt++ {
		if whole != nil {
			body = bytes.NewReader(whole)
		} else if _, err := body.(io.Seeker).Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("rewind the run: %w", err)
		}
		resp, err := c.send(ctx, http.MethodPost, path, contentType, body)
		var se *StatusError
		if attempt >= uploadRetries || !errors.As(err, &se) || se.Code != http.StatusTooManyRequests && se.Code != http.StatusServiceUnavailable {
			return resp, err
		}
		if err := sleep(ctx, retry.Backoff(attempt, se.Header, time.Now())); err != nil {
			return nil, err
		}
	}
}

// AuditUpload is an artifact audit as uploaded: its report (the JSON
// `udgam-ci audit artifact --json` writes) and the four run files it was
// judged from, by file name, from which the server recomputes it.
type AuditUpload struct {
	Report []byte
	Runs   map[string][]byte
}

// NewAuditUpload encodes an audit's report (any JSON value) and its run
// files, keyed by file name.
func NewAuditUpload(report any, runs map[string]*runfile.Run) (AuditUpload, error) {
	up := AuditUpload{Runs: map[string][]byte{}}
	var err error
	if up.Report, err = json.Marshal(report); err != nil {
		return up, fmt.Errorf("encode the audit report: %w", err)
	}
	for name, r := range runs {
		var b bytes.Buffer
		if err := runfile.Encode(&b, r); err != nil {
			return up, fmt.Errorf("encode run file %s: %w", name, err)
		}
		up.Runs[name] = b.Bytes()
	}
	return up, nil
}

// AuditReportPart names the report's part of an audit upload; each run
// file's part is named by its file name.
const AuditReportPart = "report"

// UploadAudit posts an artifact audit as one multipart/form-data body.
// The server recomputes its figures from the run files, files it under
// its model and commit, and shows it on the pages of that commit's runs;
// the same audit again is a no-op.
func (c *Client) UploadAudit(ctx context.Context, up AuditUpload) (AuditUploadResult, error) {
	var res AuditUploadResult
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	names := make([]string, 0, len(up.Runs))
	for name := range up.Runs {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := append([]string{AuditReportPart}, names...)
	for _, name := range parts {
		data := up.Report
		if name != AuditReportPart {
			data = up.Runs[name]
		}
		w, err := mw.CreateFormFile(name, name)
		if err != nil {
			return res, fmt.Errorf("upload audit: %w", err)
		}
		if _, err := w.Write(data); err != nil {
			return res, fmt.Errorf("upload audit: %w", err)
		}
	}
	if err := mw.Close(); err != nil {
		return res, fmt.Errorf("upload audit: %w", err)
	}
	resp, err := c.postRetrying(ctx, "/api/v1/audits", mw.FormDataContentType(), bytes.NewReader(body.Bytes()))
	if err != nil {
		return res, fmt.Errorf("upload audit: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return res, fmt.Errorf("upload audit: read answer: %w", err)
	}
	if strings.HasPrefix(res.URL, "/") {
		res.URL = strings.TrimSuffix(c.BaseURL, "/") + res.URL
	}
	return res, nil
}

// Audit fetches one stored artifact audit with its report.
func (c *Client) Audit(ctx context.Context, id string) (*Audit, error) {
	var a Audit
	if err := c.getJSON(ctx, "/api/v1/audits/"+url.PathEscape(id), &a); err != nil {
		return nil, fmt.Errorf("audit %s: %w", id, err)
	}
	return &a, nil
}

// UploadOptions name the baseline of an upload.
type UploadOptions struct {
	Baseline string // a stored run id
	BaseRef  string // or the newest run on this ref (the server's base branch if empty)
}

// Run fetches one stored run without its records.
func (c *Client) Run(ctx context.Context, id string) (*Run, error) {
	var r Run
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
	if !runfile.IsGitRepo(repo) {
		return nil, fmt.Errorf("baseline of %s: repository %q: want OWNER/NAME", model, repo)
	}
	var r Run
	u := "/api/v1" + ModelPath(repo, model) + "/baseline?" + url.Values{"ref": {ref}, "test": {test}}.Encode()
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

// do sends a request without a body, and turns a non-2xx answer into an error.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	return c.send(ctx, method, path, "", body)
}

// send sends a request and turns a non-2xx answer into an error.
func (c *Client) send(ctx context.Context, method, path, contentType string, body io.Reader) (*http.Response, error) {
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
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
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
	var ae ErrorBody
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &ae) == nil && ae.Error != "" {
		msg = ae.Error
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, msg)
	}
	return nil, &StatusError{Code: resp.StatusCode, Msg: msg, Header: resp.Header}
}

// UploadResult is the answer to POST /api/v1/runs.
type UploadResult struct {
	ID      string `json:"id"`
	URL     string `json:"url"` // the run's page on this server
	Created bool   `json:"created"`
	Test    string `json:"test"`
	Repo    string `json:"repo"`
	Model   string `json:"model"`
	Score   Score  `json:"score"`
	// BaselineID is the run whose settings this one was checked against;
	// empty when there was none.
	BaselineID  string `json:"baseline_id,omitempty"`
	BaselineURL string `json:"baseline_url,omitempty"`
	CompareURL  string `json:"compare_url,omitempty"`
	// Flags lists the judged settings that differ from the baseline's.
	Flags []runfile.Diff `json:"flags"`
}

// Score is a run's headline number with its 95% bootstrap interval.
type Score struct {
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
}

// Run is a stored run without its records, as GET /api/v1/runs/{id} and
// the baseline endpoint answer.
type Run struct {
	ID         string          `json:"id"`
	Test       string          `json:"test"`
	Model      string          `json:"model"`
	Revision   string          `json:"revision"`
	Repo       string          `json:"repo"`
	SHA        string          `json:"sha"`
	Ref        string          `json:"ref"`
	PR         *int            `json:"pr"`
	StartedAt  time.Time       `json:"started_at"`
	UploadedAt time.Time       `json:"uploaded_at"`
	Records    int             `json:"records"`
	Score      Score           `json:"score"`
	BaselineID string          `json:"baseline_id,omitempty"`
	Flags      []runfile.Diff  `json:"flags"`
	Header     runfile.Header  `json:"header"`
	Summary    json.RawMessage `json:"summary"`
	// Invalid says why a stored run cannot be scored (a row stored before
	// uploads were checked); its Score is then zero.
	Invalid string `json:"invalid,omitempty"`
	// Partial says how much of its set a run that stopped short scored
	// ("50 of 400, sequential"): such a run is never a baseline.
	Partial string `json:"partial,omitempty"`
	// Stop is where a sequential run stopped and why as the server
	// replayed it from the records, never the header's own claim.
	Stop *runfile.Stop `json:"stop,omitempty"`
	// Cost is what a sequential run scored of its set, in records and
	// bytes (runfile.CostOf), as the server replayed it.
	Cost *runfile.Cost `json:"cost,omitempty"`
}

// RunsPage is one page of a model's runs, newest first, as
// GET .../models/{model}/runs answers.
type RunsPage struct {
	Runs []Run  `json:"runs"`
	Next string `json:"next_cursor,omitempty"` // empty on the last page
}

// ModelTest is one (repository, model, test) row of GET /api/v1/models,
// with its latest run.
type ModelTest struct {
	Repo   string `json:"repo"`
	Model  string `json:"model"`
	Test   string `json:"test"`
	Runs   int    `json:"runs"`
	Latest Run    `json:"latest"`
}

// AuditUploadResult is the answer to POST /api/v1/audits.
type AuditUploadResult struct {
	ID       string `json:"id"`
	URL      string `json:"url"` // the audit's page on this server
	Created  bool   `json:"created"`
	Repo     string `json:"repo"`
	Model    string `json:"model"`
	Revision string `json:"revision"`
	SHA      string `json:"sha"`
	Verdict  string `json:"verdict"` // pass or fail
	// Runs are the stored runs of the model at the audit's commit, whose
	// pages show the audit; empty when none is stored yet (they show it
	// once uploaded).
	Runs []string `json:"runs"`
}

// Audit is a stored artifact audit, as GET /api/v1/audits/{id} answers.
type Audit struct {
	ID         string    `json:"id"`
	Repo       string    `json:"repo"`
	Model      string    `json:"model"`
	Revision   string    `json:"revision"`
	SHA        string    `json:"sha"`
	Ref        string    `json:"ref"`
	PR         *int      `json:"pr"`
	Artifact   string    `json:"artifact"`
	Verdict    string    `json:"verdict"`
	UploadedAt time.Time `json:"uploaded_at"`
	// Report is the audit's report, as `udgam-ci audit artifact --json`
	// writes it.
	Report json.RawMessage `json:"report"`
}

// ErrorBody is every JSON error answer.
type ErrorBody struct {
	Error string `json:"error"`
}

// ModelPath is a model's page: /repos/OWNER/NAME/models/MODEL, with each
// segment escaped on its own so the model name keeps its slashes
// (/repos/acme/train/models/HuggingFaceTB/SmolLM2-135M). A repository is
// exactly two segments and "models" follows it, so the split is never
// ambiguous. Runs stored without a repository get the legacy /models/MODEL.
func ModelPath(repo, model string) string {
	p := "/models/" + escapeSegments(model)
	if repo != "" {
		p = "/repos/" + escapeSegments(repo) + p
	}
	return p
}

func escapeSegments(s string) string {
	segs := strings.Split(s, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return strings.Join(segs, "/")
}
