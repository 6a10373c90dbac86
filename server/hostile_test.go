package server_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// TestUploadRefusesMeaninglessNumbers: records whose numbers are not
// finite, overflow a sum, or mean nothing, and starts outside the sane
// window, are each a 400 naming the record, the database unchanged and
// every page still answering (issue 13, cases 3, 4 and 5).
func TestUploadRefusesMeaninglessNumbers(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ts := startServerWith(t, server.Config{}, store.Options{Now: func() time.Time { return now }})
	fresh := servertest.Spec{ID: "good-fresh", Test: runfile.TestFresh, Seed: 1, Records: 20, Started: day(1)}
	probes := servertest.Spec{ID: "good-probes", Seed: 2, Records: 20, Started: day(1)}
	for _, sp := range []servertest.Spec{fresh, probes} {
		if code, _, body := ts.upload(sp.Body(), ""); code != 201 {
			t.Fatalf("upload %s: %d %s", sp.ID, code, body)
		}
	}
	// Every hostile run is a new run id, so only the numbers are at fault.
	hf := servertest.Spec{ID: "hostile-fresh", Test: runfile.TestFresh, Seed: 3, Records: 20, Started: day(2)}
	hp := servertest.Spec{ID: "hostile-probes", Seed: 4, Records: 20, Started: day(2)}
	doc := func(id string, bytes int64, tokens int64, bits string) string {
		return fmt.Sprintf(`{"id":%q,"source":"x","bytes":%d,"tokens":%d,"bits":%s,"windows":1}`, id, bytes, tokens, bits)
	}
	withDocs := func(docs ...string) []byte {
		return lines(hf, func(l []string) []string { return append(l[:1], docs...) })
	}
	started := func(at time.Time) []byte {
		return withHeader(hf, func(h *runfile.Header) { h.StartedAt = at })
	}
	tests := []struct {
		name string
		body []byte
		want string // the error names this
	}{
		{"bits 1e308 and 0 overflow the bootstrap", withDocs(doc("big", 1, 1, "1e308"), doc("zero", 1, 1, "0")), "document big"},
		{"bits over zero bytes", withDocs(doc("a", 100, 10, "50"), doc("nobytes", 0, 3, "5")), "document nobytes"},
		{"bytes with nothing scored", withDocs(doc("a", 100, 10, "50"), doc("padding", 1<<39, 0, "0")), "document padding"},
		{"byte totals overflow int64", withDocs(doc("h1", 1<<62, 1, "1"), doc("h2", 1<<62, 1, "1")), "document h1"},
		{"negative bits", withDocs(doc("neg", 10, 1, "-4")), "document neg"},
		{"negative tokens", withDocs(doc("negtok", 10, -1, "4")), "document negtok"},
		{"bits beyond float64", withDocs(doc("inf", 10, 1, "1e400")), "line 2"},
		{"all documents unscored", withDocs(`{"id":"u","source":"x","bytes":0,"tokens":0,"bits":0,"windows":1,"first_unscored":true}`), "scores no bytes"},
		{"pred not what the logprobs pick", lines(hp, func(l []string) []string {
			return append(l[:1], `{"id":"p1","type":"add","level":1,"logprobs":[-1,-9],"pred":1,"answer":1,"correct":true}`)
		}), "item p1"},
		{"positive logprob", lines(hp, func(l []string) []string {
			return append(l[:1], `{"id":"p2","type":"add","level":1,"logprobs":[7,-9],"pred":0,"answer":0,"correct":true}`)
		}), "item p2"},
		{"started in year 1000", started(time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)), "started_at"},
		{"started in 1999", started(time.Date(1999, 6, 1, 0, 0, 0, 0, time.UTC)), "started_at"},
		{"started two days ahead", started(now.Add(48 * time.Hour)), "started_at"},
		{"started in year 2300", started(time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)), "started_at"},
		// Under the 64 MiB upload limit but over the reader's 16 MiB line:
		// refused as the reader would refuse it when serving it back.
		{"header line over the reader's limit", withHeader(hf, func(h *runfile.Header) {
			h.Model.File = strings.Repeat("<", runfile.MaxLine)
		}), "line 1"},
	}
	before := ts.state()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := ts.do(http.MethodPost, "/api/v1/runs", ts.token, bytes.NewReader(tc.body))
			if code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", code, body)
			}
			if msg := errorOf(t, body); !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q does not name %q", msg, tc.want)
			}
			if after := ts.state(); after != before {
				t.Fatalf("database changed: %s -> %s", before, after)
			}
		})
	}
	// A start within the window is kept exactly, a day of clock skew included.
	ok := withHeader(hf, func(h *runfile.Header) { h.StartedAt = now.Add(23 * time.Hour).Add(123456789) })
	if code, res, body := ts.upload(ok, ""); code != 201 {
		t.Fatalf("upload within the window: %d %s", code, body)
	} else if r, err := ts.client.Run(context.Background(), res.ID); err != nil || !r.StartedAt.Equal(now.Add(23*time.Hour).Add(123456789)) {
		t.Fatalf("stored start %v, %v", r.StartedAt, err)
	}
	for _, path := range []string{"/", "/api/v1/models", "/models/" + model, "/api/v1/models/" + model + "/baseline?test=fresh"} {
		if code, body := ts.get(path); code != 200 {
			t.Errorf("%s after the hostile uploads: %d %s", path, code, body)
		}
	}
}

// TestReadSurvivesBadStoredRows: rows stored before uploads were checked
// (an infinite interval, a record the reader now refuses) never make a
// page or API answer 500; such a run is flagged and never a baseline.
func TestReadSurvivesBadStoredRows(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 100})
	for i, id := range []string{"old-1", "old-2", "old-3"} {
		sp := servertest.Spec{ID: id, Test: runfile.TestFresh, Seed: uint64(i), Records: 20, Started: day(1 + i)}
		if code, _, body := ts.upload(sp.Body(), ""); code != 201 {
			t.Fatalf("upload %s: %d %s", id, code, body)
		}
	}
	ts.srv.WaitDeltas() // the server writes no more behind this test's back
	db, err := sql.Open("sqlite", ts.st.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// As the old server stored the run: an interval of +Inf
	// (9e999 is how SQLite writes infinity) and a record of 1e308 bits.
	for _, q := range []string{
		`UPDATE runs SET ci_hi = 9e999 WHERE id = 'old-3'`,
		`UPDATE records SET data = '{"id":"doc-00000","source":"x","bytes":1,"tokens":1,"bits":1e308,"windows":1}' WHERE run_id = 'old-3' AND idx = 0`,
		`UPDATE runs SET score = -9e999 WHERE id = 'old-2'`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for path, want := range map[string]int{
		"/":                                     200,
		"/api/v1/models":                        200,
		"/api/v1/models/" + model + "/runs":     200,
		"/models/" + model:                      200,
		"/runs/old-3":                           200,
		"/api/v1/runs/old-3":                    200,
		"/api/v1/compare?base=old-1&head=old-3": 422,
		"/compare?base=old-1&head=old-3":        422,
	} {
		code, body := ts.get(path)
		if code != want {
			t.Errorf("%s: %d, want %d: %.300s", path, code, want, body)
		}
	}
	if code, body := ts.get("/api/v1/runs/old-3"); !strings.Contains(body, `"invalid":"its stored score`) {
		t.Errorf("the bad run is not flagged: %d %s", code, body)
	}
	if _, page := ts.get("/models/" + model); !strings.Contains(page, "old-3") || !strings.Contains(page, ">invalid<") {
		t.Errorf("the history page does not list the bad run as invalid")
	}
	// The baseline skips both bad runs.
	code, body := ts.get("/api/v1/models/" + model + "/baseline?test=fresh")
	if code != 200 || !strings.Contains(body, `"id":"old-1"`) {
		t.Errorf("baseline: %d %.200s, want old-1", code, body)
	}
	next := servertest.Spec{ID: "new-4", Test: runfile.TestFresh, Seed: 9, Records: 20, Started: day(5)}
	if code, res, body := ts.upload(next.Body(), ""); code != 201 || res.BaselineID != "old-1" {
		t.Errorf("next upload: %d baseline %q, want old-1: %s", code, res.BaselineID, body)
	}
}

// trickle opens a raw TCP connection, sends an upload's headers and the
// first bytes of a body it claims is longer, then waits for the answer
// without sending the rest. It returns the status line, or the read error
// when none came within wait.
func trickle(t *testing.T, ts *testServer, token string, wait time.Duration) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := servertest.Spec{ID: "trickled", Seed: 1, Records: 20}.Body()
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	fmt.Fprintf(conn, "POST /api/v1/runs HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", auth, len(body))
	conn.Write(body[:100]) // and then nothing more
	conn.SetReadDeadline(time.Now().Add(wait))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(line)
}

// TestTrickledUploadIsBounded: a body sent a few bytes at a time holds no
// connection: without a token the 401 comes at once, before any of the
// body is read; with one, the body has BodyTimeout to arrive (issue 13,
// case 8). The server's own read timeout is 5 minutes.
func TestTrickledUploadIsBounded(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{BodyTimeout: 300 * time.Millisecond})
	for _, tc := range []struct {
		name, token, want string
	}{
		{"no token", "", "401"},
		{"unknown token", "udgci_nope", "401"},
		{"valid token", ts.token, "408"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := trickle(t, ts, tc.token, 5*time.Second); !strings.Contains(got, tc.want) {
				t.Fatalf("answer %q, want %s within 5 s", got, tc.want)
			}
		})
	}
	before := ts.state()
	if code, _ := ts.get("/healthz"); code != 200 || ts.state() != before {
		t.Fatalf("health %d after trickled uploads", code)
	}
}

// TestHistoryOfHugeScoresAnswers: two runs whose scores differ by less
// than float64 can step at their size (1e15 bits per byte, 0.125 apart,
// the most the record limits allow) once made the chart loop forever on
// any viewer's GET; the page now answers (issue 13, case 1).
func TestHistoryOfHugeScoresAnswers(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	const m = "acme/huge"
	for i, bits := range []string{"1e15", "1000000000000000.125"} {
		sp := servertest.Spec{ID: fmt.Sprintf("huge-%d", i), Test: runfile.TestFresh, Model: m, Seed: uint64(i), Records: 1, Started: day(1 + i)}
		body := lines(sp, func(l []string) []string {
			return append(l[:1], fmt.Sprintf(`{"id":"d","source":"x","bytes":1,"tokens":1,"bits":%s,"windows":1}`, bits))
		})
		if code, _, resp := ts.upload(body, ""); code != 201 {
			t.Fatalf("upload %s: %d %s", sp.ID, code, resp)
		}
	}
	for _, path := range []string{"/models/" + m, "/models/" + m + "?ref=junk", "/"} {
		if code, body := ts.get(path); code != 200 || strings.Contains(body, "NaN") {
			t.Errorf("%s: %d", path, code)
		}
	}
}
