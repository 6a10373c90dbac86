package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

var hookSecret = []byte("per-server secret")

// received is one webhook post as a receiver saw it.
type received struct {
	body   []byte
	header http.Header
}

// receiver is a local webhook receiver answering with handle (nil: 204),
// passing every post it reads to the channel.
func receiver(t *testing.T, handle func(http.ResponseWriter, *http.Request)) (string, chan received) {
	t.Helper()
	got := make(chan received, 64)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{body: b, header: r.Header.Clone()}
		if handle == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		handle(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL, got
}

func fastBackoff(int, http.Header) time.Duration { return 10 * time.Millisecond }

// regress uploads two base-branch probes runs, the second 20 points worse:
// its stored comparison is a regression. With anchor, the first is pinned
// as the model's anchor with a budget of 5 points before the second comes.
func regress(t *testing.T, ts *testServer, anchor bool) {
	t.Helper()
	for i, score := range []float64{60, 40} {
		sp := servertest.Spec{Test: runfile.TestProbes, Model: model, Seed: uint64(1 + i), Records: 400, Score: score}
		if code, _, body := ts.upload(sp.Body(), ""); code != http.StatusCreated {
			t.Fatalf("upload: %d %s", code, body)
		}
		if i == 0 && anchor {
			if code, b, _ := ts.do(http.MethodPost, "/api/v1/runs/probes-1/anchor", ts.token, strings.NewReader(`{"max_drift": 5}`)); code != http.StatusOK {
				t.Fatalf("pin: %d %s", code, b)
			}
		}
	}
}

func deliveries(t *testing.T, ts *testServer) []client.WebhookDelivery {
	t.Helper()
	code, body, _ := ts.do(http.MethodGet, "/api/v1/webhooks/deliveries", ts.token, nil)
	if code != http.StatusOK {
		t.Fatalf("deliveries: %d %s", code, body)
	}
	var out struct{ Deliveries []client.WebhookDelivery }
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	return out.Deliveries
}

// settled waits until every delivery of n is delivered or failed.
func settled(t *testing.T, ts *testServer, n int, within time.Duration) []client.WebhookDelivery {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ds := deliveries(t, ts)
		done := len(ds) == n
		for _, d := range ds {
			done = done && d.State != "pending"
		}
		if done {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries not settled within %s: %+v", within, ds)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWebhookEvents: a base-branch regression, its drift beyond the
// anchor's budget and a failed audit each reach the receiver as signed
// JSON with a text Slack shows; a pull request's regression sends nothing; the token's owner reads the
// delivery records, and no one else does.
func TestWebhookEvents(t *testing.T) {
	t.Parallel()
	url, got := receiver(t, nil)
	ts := startServer(t, server.Config{Webhook: server.Webhook{URL: url, Secret: hookSecret, Backoff: fastBackoff}})
	regress(t, ts, true)
	// A pull request 30 points worse than main: not an event.
	pr := servertest.Spec{Test: runfile.TestProbes, Model: model, Seed: 3, Records: 400, Score: 10, Ref: "exp", PR: 9}
	if code, _, body := ts.upload(pr.Body(), ""); code != http.StatusCreated {
		t.Fatalf("upload: %d %s", code, body)
	}
	events := map[string]client.WebhookEvent{}
	receive := func(n int) {
		for len(events) < n {
			select {
			case r := <-got:
				if err := client.VerifySignature(hookSecret, r.body, r.header.Get(client.SignatureHeader)); err != nil {
					t.Errorf("signature: %v", err)
				}
				if err := client.VerifySignature([]byte("wrong secret"), r.body, r.header.Get(client.SignatureHeader)); err == nil {
					t.Error("a wrong secret verifies the signature")
				}
				if err := client.VerifySignature(hookSecret, append(r.body, ' '), r.header.Get(client.SignatureHeader)); err == nil {
					t.Error("a changed body verifies the signature")
				}
				var ev client.WebhookEvent
				if err := json.Unmarshal(r.body, &ev); err != nil {
					t.Fatalf("event %s: %v", r.body, err)
				}
				if r.header.Get("X-Udgam-Event") != ev.Event || r.header.Get("X-Udgam-Delivery") != ev.ID || ev.ID == "" {
					t.Errorf("headers %v for event %+v", r.header, ev)
				}
				if _, dup := events[ev.Event]; dup {
					t.Errorf("event %s twice", ev.Event)
				}
				events[ev.Event] = ev
			case <-time.After(60 * time.Second):
				t.Fatalf("events received: %v", events)
			}
		}
	}
	// The regression and the drift, before a newer main run makes the
	// drift old news.
	receive(2)
	seedCommit(t, ts, 5)
	rep, files := auditOf(t, testRepo, 5)
	up, err := ts.client.UploadAudit(context.Background(), auditUpload(t, rep, files))
	if err != nil || up.Verdict != "fail" {
		t.Fatalf("audit upload: %+v %v", up, err)
	}
	receive(3)
	reg := events[client.EventRegression]
	if reg.Run != "probes-2" || reg.BaselineID != "probes-1" || reg.Delta == nil || *reg.Delta > -10 || reg.CI == nil || reg.CI[1] >= 0 ||
		!strings.Contains(reg.Text, "regressed on main") || !strings.Contains(reg.Text, model) || !strings.Contains(reg.Text, "/compare?") {
		t.Errorf("regression event: %+v", reg)
	}
	drift := events[client.EventDrift]
	if drift.Run != "probes-2" || drift.Anchor != "probes-1" || drift.MaxDrift == nil || *drift.MaxDrift != 5 || drift.Delta == nil ||
		*drift.Delta != *reg.Delta || !strings.Contains(drift.Text, "drifted beyond its budget on main") {
		t.Errorf("drift event: %+v", drift)
	}
	aud := events[client.EventAuditFailed]
	if aud.Audit != up.ID || len(aud.Reasons) == 0 || !strings.Contains(aud.Text, "failed") || !strings.Contains(aud.Text, aud.Reasons[0]) {
		t.Errorf("audit event: %+v", aud)
	}
	// The pull request's comparison is stored, and sent nothing.
	waitFor(t, ts, "/models/"+model, "exp")
	select {
	case r := <-got:
		t.Errorf("an event no one should get: %s", r.body)
	case <-time.After(300 * time.Millisecond):
	}

	ds := settled(t, ts, 3, 10*time.Second)
	for _, d := range ds {
		if d.State != "delivered" || d.Attempts != 1 || d.LastCode != http.StatusNoContent {
			t.Errorf("delivery %+v", d)
		}
	}
	if code, _, _ := ts.do(http.MethodGet, "/api/v1/webhooks/deliveries", "", nil); code != http.StatusUnauthorized {
		t.Errorf("deliveries without a token: %d, want 401", code)
	}
	other, _, err := ts.st.CreateToken(context.Background(), "someone/else")
	if err != nil {
		t.Fatal(err)
	}
	if code, body, _ := ts.do(http.MethodGet, "/api/v1/webhooks/deliveries", other, nil); code != http.StatusOK || strings.Contains(string(body), "evt-") {
		t.Errorf("another repository's token: %d %s", code, body)
	}
}

// uploadLatency is the median time of n uploads of pull-request runs.
func uploadLatency(t *testing.T, ts *testServer, n int) time.Duration {
	t.Helper()
	var ds []time.Duration
	for i := range n {
		sp := servertest.Spec{Test: runfile.TestFresh, Model: "latency/m", Seed: uint64(100 + i), Records: 200, Ref: "exp"}
		body := sp.Body()
		start := time.Now()
		if code, _, b := ts.upload(body, ""); code != http.StatusCreated {
			t.Fatalf("upload: %d %s", code, b)
		}
		ds = append(ds, time.Since(start))
	}
	return median(ds)
}

// TestWebhookBadReceivers: a receiver that hangs, one that answers 500
// forever and one that redirects elsewhere leave uploads at the latency
// of a server without a webhook, made while the receiver misbehaves; the
// delivery record says what happened; the redirect is not followed.
func TestWebhookBadReceivers(t *testing.T) {
	t.Parallel()
	const n = 15
	plain := startServer(t, server.Config{})
	regress(t, plain, false)
	normal := uploadLatency(t, plain, n)

	var elsewhere atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(target.Close)
	for _, tc := range []struct {
		name     string
		handle   func(http.ResponseWriter, *http.Request)
		attempts int
		code     int
		result   string
	}{
		{"hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, 3, 0, "no answer within 1s"},
		{"500", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }, 3, 500, "answered 500"},
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
		}, 1, 307, "not followed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, got := receiver(t, tc.handle)
			ts := startServer(t, server.Config{Webhook: server.Webhook{URL: url, Secret: hookSecret, Timeout: time.Second, Attempts: 3, Backoff: fastBackoff}})
			regress(t, ts, false)
			select {
			case <-got: // the receiver is misbehaving now
			case <-time.After(60 * time.Second):
				t.Fatal("the event never reached the receiver")
			}
			lat := uploadLatency(t, ts, n)
			if lat > 3*normal+100*time.Millisecond {
				t.Errorf("median upload %s with a %s receiver, %s without a webhook", lat, tc.name, normal)
			}
			ds := settled(t, ts, 1, 30*time.Second)
			d := ds[0]
			if d.State != "failed" || d.Attempts != tc.attempts || d.LastCode != tc.code || !strings.Contains(d.Result, tc.result) {
				t.Errorf("delivery %+v, want failed after %d attempts, code %d, saying %q", d, tc.attempts, tc.code, tc.result)
			}
			t.Logf("%s: median upload %s (%s without a webhook); %s", tc.name, lat, normal, d.Result)
		})
	}
	if c := elsewhere.Load(); c != 0 {
		t.Errorf("the redirect was followed %d times", c)
	}
}

// TestWebhookConfig: a webhook needs an absolute URL and a secret.
func TestWebhookConfig(t *testing.T) {
	t.Parallel()
	st := startServer(t, server.Config{}).st
	for _, w := range []server.Webhook{{URL: "http://127.0.0.1:1/h"}, {URL: "ftp://x/h", Secret: hookSecret}, {URL: "/relative", Secret: hookSecret}} {
		if _, err := server.New(server.Config{Store: st, Webhook: w}); err == nil {
			t.Errorf("%+v accepted", w)
		}
	}
}
