package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// TestUploadRefusesHostileHeaders: negative header numbers, bytes that
// are not UTF-8, a repeated key and an over-long line are each a 400 that
// names the field or line, and leave the database as it was; a BOM is
// accepted (issue 32).
func TestUploadRefusesHostileHeaders(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	sp := servertest.Spec{ID: "h32", Seed: 1, Records: 20, Started: day(1)}
	fresh := servertest.Spec{ID: "h32f", Test: runfile.TestFresh, Seed: 1, Records: 20, Started: day(1)}
	header := func(sp servertest.Spec, edit func(*runfile.Header)) []byte { return withHeader(sp, edit) }
	raw := func(sp servertest.Spec, old, new string) []byte {
		b := sp.Body()
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%q is not in the run file", old)
		}
		return bytes.Replace(b, []byte(old), []byte(new), 1)
	}
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"dataset.count -1", header(sp, func(h *runfile.Header) { h.Dataset.Count = -1 }), "dataset.count -1"},
		{"settings.window -1", header(fresh, func(h *runfile.Header) { h.Settings.Window = -1 }), "settings.window -1"},
		{"runtime.threads -1", header(sp, func(h *runfile.Header) { h.Runtime.Threads = -1 }), "runtime.threads -1"},
		{"item level -7", raw(sp, `"level":1`, `"level":-7`), "level -7"},
		{"record id not UTF-8", raw(sp, `"id":"pea-`, "\"id\":\"\xffpea-"), "line 2: not valid UTF-8"},
		{"dataset.name not UTF-8", raw(sp, `"name":"udgam-probes"`, "\"name\":\"udgam-probes\xc3\""), "line 1: not valid UTF-8"},
		{"header id twice", raw(sp, `"id":"h32"`, `"id":"h32","id":"other"`), `key "id" appears twice`},
		{"a 20 MB line", raw(sp, `"id":"h32"`, `"id":"h32","x":"`+strings.Repeat("a", 20<<20)+`"`), "line 1: longer than the limit of 16777216 bytes (16 MiB)"},
	}
	before := ts.state()
	for _, tc := range tests {
		code, body, _ := ts.do(http.MethodPost, "/api/v1/runs", ts.token, bytes.NewReader(tc.body))
		if code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %.300s", tc.name, code, body)
			continue
		}
		if msg := errorOf(t, body); !strings.Contains(msg, tc.want) {
			t.Errorf("%s: error %q does not say %q", tc.name, msg, tc.want)
		}
	}
	if after := ts.state(); after != before {
		t.Fatalf("database changed: %s -> %s", before, after)
	}
	// Bytes not UTF-8 are never stored as U+FFFD.
	if runs, records, _ := ts.st.Counts(context.Background()); runs != 0 || records != 0 {
		t.Fatalf("%d runs, %d records stored", runs, records)
	}
	// A BOM is accepted: it is not data.
	if code, res, body := ts.upload(append([]byte("\xEF\xBB\xBF"), sp.Body()...), ""); code != 201 || res.ID != "h32" {
		t.Fatalf("upload with a BOM: %d %s", code, body)
	}
}

// TestUploadBounds: the record limit that /compare applies refuses an
// upload at its first record over it, naming the limit; one token's
// uploads in flight and the server's are bounded: one over waits, and is
// answered with Retry-After when its wait runs out (issue 32).
func TestUploadBounds(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{MaxRecords: 100, MaxUploads: 2, MaxUploadsPerToken: 1, UploadWait: 1500 * time.Millisecond})
	big := servertest.Spec{ID: "big", Seed: 1, Records: 101, Started: day(1)}
	before := ts.state()
	code, body, _ := ts.do(http.MethodPost, "/api/v1/runs", ts.token, bytes.NewReader(big.Body()))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(errorOf(t, body), "over 100 records") || !strings.Contains(string(body), "compares runs of up to 100 records") {
		t.Fatalf("101 records over a limit of 100: %d %s", code, body)
	}
	if after := ts.state(); after != before {
		t.Fatalf("database changed: %s -> %s", before, after)
	}

	// An upload whose body is still arriving holds its token's place.
	finishSlow := ts.heldUpload(ts.token, servertest.Spec{ID: "slow", Seed: 2, Records: 50, Started: day(2)}.Body())
	ok := servertest.Spec{ID: "ok", Seed: 3, Records: 20, Started: day(3)}.Body()
	code, body, hdr := ts.do(http.MethodPost, "/api/v1/runs", ts.token, bytes.NewReader(ok))
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" || !strings.Contains(string(body), "kept this one waiting") {
		t.Errorf("second upload of one token: %d %s (Retry-After %q)", code, body, hdr.Get("Retry-After"))
	}
	// Another token takes the second place; a third token finds none.
	ctx := context.Background()
	var tokens []string
	for range 2 {
		tok, _, err := ts.st.CreateToken(ctx, testRepo)
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tok)
	}
	finishOther := ts.heldUpload(tokens[0], servertest.Spec{ID: "ok2", Seed: 4, Records: 20, Started: day(4)}.Body())
	code, body, hdr = ts.do(http.MethodPost, "/api/v1/runs", tokens[1], bytes.NewReader(ok))
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !strings.Contains(string(body), "the most it takes at once, and this one waited") {
		t.Errorf("third upload with the server full: %d %s", code, body)
	}
	if a, b := finishSlow(), finishOther(); a != 201 || b != 201 {
		t.Fatalf("the held uploads: %d and %d, want 201", a, b)
	}
	// The places are free again; one that waits for its token's place
	// lands once the upload ahead of it ends.
	if code, _, body := ts.upload(ok, ""); code != 201 {
		t.Fatalf("upload after the others ended: %d %s", code, body)
	}
	finishLate := ts.heldUpload(ts.token, servertest.Spec{ID: "late", Seed: 5, Records: 20, Started: day(5)}.Body())
	queued := make(chan int, 1)
	go func() {
		code, _, _ := ts.do(http.MethodPost, "/api/v1/runs", ts.token, bytes.NewReader(servertest.Spec{ID: "queued", Seed: 6, Records: 20, Started: day(6)}.Body()))
		queued <- code
	}()
	for start := time.Now(); ts.srv.UploadsOf(ts.token) < 2; { // until the second one waits
		if time.Since(start) > time.Minute {
			t.Fatal("the second upload never waited for its token's place")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if a, b := finishLate(), <-queued; a != 201 || b != 201 {
		t.Fatalf("held upload %d, queued upload %d: want both 201", a, b)
	}
}

// heldUpload starts an upload and sends the start of its body: once that
// write returns the server is reading the body, which it does only after
// taking a place. finish sends the rest and returns the status.
func (ts *testServer) heldUpload(token string, body []byte) (finish func() int) {
	ts.t.Helper()
	before := ts.srv.UploadsOf(token)
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, ts.url+"/api/v1/runs", pr)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	if _, err := pw.Write(body[:100]); err != nil {
		ts.t.Fatal(err)
	}
	// The bytes leaving the pipe say nothing of the server: wait until it
	// counts the upload, so what follows meets it (a loaded machine is slow).
	for start := time.Now(); ts.srv.UploadsOf(token) <= before; {
		if time.Since(start) > time.Minute {
			ts.t.Fatal("the held upload never reached the server")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return func() int {
		pw.Write(body[100:])
		pw.Close()
		return <-done
	}
}

// TestFullDiskIs507: a write refused because the database is full is 507
// with a message saying so (not 500 "internal error"), nothing is kept,
// and the cause is logged (issue 32). The store's page cap stands in for
// a full filesystem: SQLite answers both with SQLITE_FULL.
func TestFullDiskIs507(t *testing.T) {
	t.Parallel()
	ts := startServerWith(t, server.Config{}, store.Options{MaxPages: 40})
	before := ts.state()
	sp := servertest.Spec{ID: "fills", Test: runfile.TestFresh, Seed: 1, Records: 3000, Started: day(1)}
	code, body, _ := ts.do(http.MethodPost, "/api/v1/runs", ts.token, bytes.NewReader(sp.Body()))
	if code != http.StatusInsufficientStorage || !strings.Contains(errorOf(t, body), "disk is full") {
		t.Fatalf("upload to a full database: %d %s", code, body)
	}
	if after := ts.state(); after != before {
		t.Fatalf("database changed: %s -> %s", before, after)
	}
	if !strings.Contains(ts.logs.String(), "full") {
		t.Fatalf("the cause is not logged:\n%s", ts.logs.String())
	}
	small := servertest.Spec{ID: "fits", Seed: 2, Records: 5, Started: day(2)}
	if code, _, body := ts.upload(small.Body(), ""); code != 201 {
		t.Fatalf("a small upload after the full one: %d %s", code, body)
	}
}

// TestHeadAnswersLikeGet: HEAD on every page is GET's status and headers
// without a body (issue 32).
func TestHeadAnswersLikeGet(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 200})
	for _, sp := range []servertest.Spec{{ID: "a", Seed: 1, Records: 20, Started: day(1)}, {ID: "b", Seed: 2, Records: 20, Started: day(2)}} {
		if code, _, body := ts.upload(sp.Body(), ""); code != 201 {
			t.Fatalf("upload: %d %s", code, body)
		}
	}
	for _, path := range []string{"/", "/models/" + model, "/repos/" + testRepo + "/models/" + model, "/runs/a", "/compare?base=a&head=b", "/runs/nope"} {
		get, _, gh := ts.do(http.MethodGet, path, "", nil)
		head, body, hh := ts.do(http.MethodHead, path, "", nil)
		if head != get || len(body) != 0 || hh.Get("Content-Type") != gh.Get("Content-Type") {
			t.Errorf("HEAD %s: %d, %d bytes, %q; GET: %d, %q", path, head, len(body), hh.Get("Content-Type"), get, gh.Get("Content-Type"))
		}
	}
}

// TestPagesFollowNewRuns: a cached page is never served after a run was
// added (issue 32's page cache).
func TestPagesFollowNewRuns(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	for i, path := range []string{"/", "/models/" + model} {
		sp := servertest.Spec{ID: fmt.Sprintf("first-%d", i), Seed: uint64(i), Records: 20, Started: day(1 + i)}
		if code, _, body := ts.upload(sp.Body(), ""); code != 201 {
			t.Fatalf("upload: %d %s", code, body)
		}
		ts.srv.WaitDeltas() // its change interval changes the page too
		_, page := ts.get(path)
		_, again := ts.get(path)
		if page != again {
			t.Fatalf("%s changed with no new run", path)
		}
		next := servertest.Spec{ID: fmt.Sprintf("later-%d", i), Seed: 9, Records: 20, Started: day(20 + i)}
		if code, _, body := ts.upload(next.Body(), ""); code != 201 {
			t.Fatalf("upload: %d %s", code, body)
		}
		if _, after := ts.get(path); !strings.Contains(after, next.ID) {
			t.Errorf("%s after a new run does not show it (a stale cached page)", path)
		}
	}
}

// TestAnonymousComparesAreBounded: without a token no comparison may ask
// for more resamples than the default, and comparisons with their own
// seed wait in a slot of their own: with that slot taken, the comparison
// pages link to still answers at once (issue 32).
func TestAnonymousComparesAreBounded(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 200, CompareTimeout: 2e9})
	for _, sp := range []servertest.Spec{{ID: "a", Seed: 1, Records: 40, Started: day(1)}, {ID: "b", Seed: 2, Records: 40, Started: day(2)}} {
		if code, _, body := ts.upload(sp.Body(), ""); code != 201 {
			t.Fatalf("upload: %d %s", code, body)
		}
	}
	code, body := ts.get("/api/v1/compare?base=a&head=b&resamples=20000")
	if code != http.StatusUnauthorized || !strings.Contains(body, "needs a token") {
		t.Errorf("anonymous resamples=20000: %d %s", code, body)
	}
	if code, body, _ := ts.do(http.MethodGet, "/api/v1/compare?base=a&head=b&resamples=1000", ts.token, nil); code != 200 {
		t.Errorf("resamples=1000 with a token: %d %s", code, body)
	}
	release := ts.srv.HoldCompareSlots(true)
	defer release()
	if code, body := ts.get("/compare?base=a&head=b"); code != 200 {
		t.Errorf("the default comparison with the custom slot taken: %d %.300s", code, body)
	}
	if code, body := ts.get("/api/v1/compare?base=a&head=b&seed=12345"); code != http.StatusServiceUnavailable {
		t.Errorf("a new seed with its slot taken: %d %s, want 503 when the wait runs out", code, body)
	}
}

// TestPagesSayWhatTheCommentSays: the compare page names its data, warns
// of the smoke sample, and for probes shows the flips and the floors of
// chance and a constant answer, as the comment does; the index says why a
// trend is missing; the history page gives each change its interval, the
// one the compare page gives (issue 32).
func TestPagesSayWhatTheCommentSays(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 200})
	floors := func(h *runfile.Header) {
		h.Dataset.Smoke = true
		h.Dataset.Constant = map[string]float64{"add": 99, "mul": 20}
	}
	for _, b := range [][]byte{
		withHeader(servertest.Spec{ID: "p1", Seed: 1, Records: 140, Started: day(1)}, floors),
		withHeader(servertest.Spec{ID: "p2", Seed: 2, Records: 140, Started: day(2)}, floors),
		servertest.Spec{ID: "f1", Test: runfile.TestFresh, Model: "org/lonely", Seed: 3, Records: 30, Started: day(3)}.Body(),
	} {
		if code, _, body := ts.upload(b, ""); code != 201 {
			t.Fatalf("upload: %d %s", code, body)
		}
	}
	_, page := ts.get("/compare?base=p1&head=p2")
	for _, want := range []string{
		`id="smoke"`, "smoke sample — not the benchmark", "Both runs scored the embedded smoke sample",
		`id="data"`, "Probe Suite data: udgam-probes at 2026-11",
		"R→W", "W→R", "flips: ", `id="constant"`, "does not beat always giving the same answer on add",
		">99.0 ⚑<", ">20.0<",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the compare page lacks %q", want)
		}
	}
	_, index := ts.get("/")
	if !strings.Contains(index, "1 run on main: a trend needs 2") {
		t.Errorf("the index gives no reason for a missing trend")
	}
	_, api := ts.get("/api/v1/compare?base=p1&head=p2")
	var cmp struct {
		CI [2]float64 `json:"ci"`
	}
	if err := json.Unmarshal([]byte(api), &cmp); err != nil {
		t.Fatal(err)
	}
	ts.srv.WaitDeltas() // computed after the upload is answered
	_, history := ts.get("/models/" + model)
	want := strings.ReplaceAll(report.FormatCI(compare.MetricAccuracy, cmp.CI), "+", "&#43;") // as html/template writes it
	if !strings.Contains(history, "[95% interval]") || !strings.Contains(history, `<span class="muted">`+want+`</span>`) {
		t.Errorf("the history page lacks the change's interval %s", want)
	}
}

// TestClientRetriesBusyServer: an upload the server was too busy to read
// is sent again after the wait its Retry-After asks, and lands (push and
// the Action upload through this client; issue 32).
func TestClientRetriesBusyServer(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{MaxUploadsPerToken: 1, UploadWait: 100 * time.Millisecond})
	finish := ts.heldUpload(ts.token, servertest.Spec{ID: "ahead", Seed: 1, Records: 20, Started: day(1)}.Body())
	var waits []time.Duration
	c := *ts.client
	c.Sleep = func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		if len(waits) == 1 {
			if code := finish(); code != 201 {
				t.Errorf("the upload ahead: %d", code)
			}
		}
		return nil
	}
	// A reader that cannot seek is read once and sent again whole.
	body := io.MultiReader(bytes.NewReader(servertest.Spec{ID: "behind", Seed: 2, Records: 20, Started: day(2)}.Body()))
	res, err := c.Upload(context.Background(), body)
	if err != nil || !res.Created || res.ID != "behind" {
		t.Fatalf("upload behind a busy token: %+v, %v", res, err)
	}
	if len(waits) != 1 || waits[0] != 5*time.Second {
		t.Fatalf("waited %v, want once for the server's Retry-After of 5 s", waits)
	}
}
