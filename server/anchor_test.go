package server_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/internal/goldentest"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// updating reads -update, which the package's own tests define (one test
// binary holds both).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// driftBody is merge number step of a model that loses 0.0015 bits per
// byte with every merge, with the small noise of a retrained checkpoint.
func driftBody(t *testing.T, step int, ref string, pr int) []byte {
	t.Helper()
	run := servertest.Spec{ID: fmt.Sprintf("fresh-merge-%02d", step), Test: runfile.TestFresh, Model: model,
		Revision: fmt.Sprintf("%08x%032x", uint32(step+1)*2654435761, step), Ref: ref, PR: pr, Records: 120, Score: 0.95 + 0.0015*float64(step), Seed: 7,
		Started: time.Date(2026, 11, 1+step, 9, 0, 0, 0, time.UTC)}.Run()
	if pr != 0 {
		run.Header.ID = fmt.Sprintf("fresh-pr-%02d", step)
	}
	run.Docs = comparetest.Jittered(run.Docs, uint64(step), 0.001)
	var b bytes.Buffer
	if err := runfile.Encode(&b, run); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Ten merges to main, each 0.0015 worse than the last and inside the
// 0.002 minimum effect, after the release pinned as the anchor with a 0.01
// budget: the server computes each run's change since the anchor and
// flags the runs beyond the budget (the seventh merge on) though no pull
// request failed; the history page draws it (golden).
func TestAnchorDriftOnHistoryPage(t *testing.T) {
	t.Parallel()
	// A fixed clock: the page says when the anchor was pinned.
	clock := func() time.Time { return time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC) }
	ts := startServerWith(t, server.Config{CompareResamples: 400}, store.Options{Now: clock})
	ctx := context.Background()
	if code, _, body := ts.upload(driftBody(t, 0, "main", 0), ""); code != 201 {
		t.Fatalf("anchor upload: %d %s", code, body)
	}
	budget := 0.01
	a, err := ts.client.PinAnchor(ctx, "fresh-merge-00", &budget)
	if err != nil {
		t.Fatal(err)
	}
	if a.Run.ID != "fresh-merge-00" || a.MaxDrift == nil || *a.MaxDrift != budget {
		t.Fatalf("pinned %+v", a)
	}
	for k := 1; k <= 10; k++ {
		if code, _, body := ts.upload(driftBody(t, k, "main", 0), ""); code != 201 {
			t.Fatalf("merge %d: %d %s", k, code, body)
		}
	}
	if code, _, body := ts.upload(driftBody(t, 4, "exp/warmup", 12), ""); code != 201 {
		t.Fatalf("pr: %d %s", code, body)
	}
	ts.srv.WaitDeltas()

	// The Action's view: the anchor's records through the API.
	run, err := ts.client.Anchor(ctx, testRepo, model, runfile.TestFresh)
	if err != nil || run.Header.ID != "fresh-merge-00" || len(run.Docs) != 120 {
		t.Fatalf("anchor run %v: %v", run, err)
	}
	if _, err := ts.client.Anchor(ctx, testRepo, model, runfile.TestProbes); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("probes anchor: %v, want not found", err)
	}

	code, page := ts.get("/repos/" + testRepo + "/models/" + model + "?test=fresh")
	if code != 200 {
		t.Fatalf("history page: %d\n%s", code, page)
	}
	// Merges 7 to 10 (0.0105 to 0.015 since the anchor) are beyond it;
	// merge 6 (0.009) and the pull request (0.006) are not.
	if n := strings.Count(page, `<span class="flag drift" title=`); n != 4 {
		t.Errorf("%d rows marked beyond the drift budget, want 4", n)
	}
	if n := strings.Count(page, `<rect class="drift"`); n != 4 {
		t.Errorf("%d chart points marked beyond the drift budget, want 4", n)
	}
	for _, want := range []string{"drift budget 0.0100 bpb: <span class=\"flag drift\">4 runs beyond it</span>",
		`<span class="tag anchor">anchor</span>`, "Δ since anchor [95% interval]", `<line class="anchor"`, ">drift budget<"} {
		if !strings.Contains(page, want) {
			t.Errorf("the history page lacks %q", want)
		}
	}
	goldentest.Check(t, filepath.Join("testdata", "history_anchor.html"), []byte(page), updating())
	if n := strings.Count(ts.logs.String(), `"msg":"run beyond the drift budget since its anchor"`); n != 4 {
		t.Errorf("%d runs logged beyond the drift budget, want 4:\n%s", n, ts.logs.String())
	}
}

// Pinning is token-scoped as uploads are: no token, another repository's
// token or a partial run are refused, and nothing is pinned.
func TestAnchorPinRefusals(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 200})
	ctx := context.Background()
	if code, _, body := ts.upload(driftBody(t, 0, "main", 0), ""); code != 201 {
		t.Fatalf("upload: %d %s", code, body)
	}
	other, _, err := ts.st.CreateToken(ctx, "evil/repo")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		token, body string
		code        int
		msg         string
	}{
		{"", "", http.StatusUnauthorized, "a token is needed"},
		{other, "", http.StatusNotFound, "run fresh-merge-00 is not stored for evil/repo"},
		{ts.token, `{"max_drift": -1}`, http.StatusBadRequest, "drift budget -1"},
		{ts.token, `{"budget": 1}`, http.StatusBadRequest, "unknown field"},
	} {
		code, b, _ := ts.do(http.MethodPost, "/api/v1/runs/fresh-merge-00/anchor", tc.token, strings.NewReader(tc.body))
		if code != tc.code || !strings.Contains(errorOf(t, b), tc.msg) {
			t.Errorf("token %q body %q: %d %s, want %d %q", tc.token[:min(8, len(tc.token))], tc.body, code, b, tc.code, tc.msg)
		}
	}
	if code, _, _ := ts.do(http.MethodGet, "/api/v1/repos/"+testRepo+"/models/"+model+"/anchor?test=fresh", "", nil); code != http.StatusNotFound {
		t.Errorf("an anchor was pinned by a refused request: %d", code)
	}
	// Pinned without a budget: the runs get their change since it, never
	// a flag.
	if _, err := ts.client.PinAnchor(ctx, "fresh-merge-00", nil); err != nil {
		t.Fatal(err)
	}
	if code, _, body := ts.upload(driftBody(t, 9, "main", 0), ""); code != 201 {
		t.Fatalf("upload: %d %s", code, body)
	}
	ts.srv.WaitDeltas()
	_, page := ts.get("/repos/" + testRepo + "/models/" + model + "?test=fresh")
	if !strings.Contains(page, "drift budget none.") || strings.Contains(page, `class="flag drift"`) || !strings.Contains(page, `data-label="since anchor">&#43;0.013`) {
		t.Errorf("history page without a budget:\n%s", page)
	}
}
