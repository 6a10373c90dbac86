package server_test

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// TestCompareIsBounded: /compare refuses runs over the record limit
// before loading them, answers a repeated comparison from its cache, and
// gives up with 503 once its time budget is spent (issue 13, case 7).
func TestCompareIsBounded(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 200, MaxRecords: 100})
	for _, sp := range []servertest.Spec{
		{ID: "a", Seed: 1, Records: 60, Started: day(1)},
		{ID: "b", Seed: 2, Records: 60, Started: day(2)},
	} {
		if code, _, body := ts.upload(sp.Body(), ""); code != 201 {
			t.Fatalf("upload %s: %d %s", sp.ID, code, body)
		}
	}
	// Uploads over the limit are refused (TestUploadBounds); a run stored
	// before the limit existed is put behind the server's back.
	big := servertest.Spec{ID: "big", Seed: 3, Records: 101, Started: day(3)}
	if _, err := server.Ingest(context.Background(), ts.st, big.Run(), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{
		"/api/v1/compare?base=a&head=big":              422,
		"/compare?base=big&head=a":                     422,
		"/api/v1/compare?base=a&head=b&resamples=5":    400,
		"/api/v1/compare?base=a&head=b&resamples=1e9":  400,
		"/api/v1/compare?base=a&head=b&seed=-1":        400,
		"/api/v1/compare?base=a&head=b&seed=7":         200,
		"/api/v1/compare?base=a&head=b&resamples=1000": 200,
	} {
		if code, body := ts.get(path); code != want {
			t.Errorf("%s: %d, want %d: %s", path, code, want, body)
		}
	}
	if _, body := ts.get("/api/v1/compare?base=a&head=big"); !strings.Contains(body, "up to 100") {
		t.Errorf("the limit is not named: %s", body)
	}
	code, first := ts.get("/api/v1/compare?base=a&head=b")
	if code != 200 {
		t.Fatalf("compare: %d %s", code, first)
	}
	// Take the records away behind the server's back: a cached comparison
	// still answers, the same, while one with another seed must recompute.
	ts.srv.WaitDeltas() // the server writes no more behind this test's back
	db, err := sql.Open("sqlite", ts.st.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM records WHERE run_id IN ('a', 'b')`); err != nil {
		t.Fatal(err)
	}
	if code, again := ts.get("/api/v1/compare?base=a&head=b"); code != 200 || again != first {
		t.Errorf("repeated compare not served from the cache: %d", code)
	}
	if code, body := ts.get("/compare?base=a&head=b"); code != 200 {
		t.Errorf("compare page of a cached comparison: %d %.200s", code, body)
	}
	if code, _ := ts.get("/api/v1/compare?base=a&head=b&seed=99"); code != 422 {
		t.Errorf("compare with another seed: %d, want 422 (recomputed without records)", code)
	}

	// A budget far below the work: 503, and the server answers on.
	slow := startServer(t, server.Config{CompareTimeout: time.Millisecond})
	for _, sp := range []servertest.Spec{
		{ID: "x", Test: runfile.TestFresh, Seed: 1, Records: 2000, Started: day(1)},
		{ID: "y", Test: runfile.TestFresh, Seed: 2, Records: 2000, Started: day(2)},
	} {
		if code, _, body := slow.upload(sp.Body(), ""); code != 201 {
			t.Fatalf("upload %s: %d %s", sp.ID, code, body)
		}
	}
	if code, body := slow.get("/api/v1/compare?base=x&head=y"); code != http.StatusServiceUnavailable || !strings.Contains(body, "limit of 1ms") {
		t.Errorf("over budget: %d %s", code, body)
	}
	if code, _ := slow.get("/healthz"); code != 200 {
		t.Errorf("health after an abandoned compare: %d", code)
	}
}
