package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

const model = "HuggingFaceTB/SmolLM2-135M"

func day(d int) time.Time { return time.Date(2026, 11, d, 9, 0, 0, 0, time.UTC) }

func TestUploadReadBack(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	ctx := context.Background()
	for _, test := range []string{runfile.TestFresh, runfile.TestProbes} {
		sp := servertest.Spec{Test: test, Seed: 1, Records: 120, Started: day(1)}
		res, err := ts.client.Upload(ctx, bytes.NewReader(sp.Body()))
		if err != nil {
			t.Fatal(err)
		}
		id := sp.Run().Header.ID
		if !res.Created || res.ID != id || res.URL != ts.url+"/runs/"+id || res.Model != model || len(res.Flags) != 0 {
			t.Fatalf("upload result %+v", res)
		}
		// Gzip is accepted, and the same run twice is stored once.
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(sp.Body())
		zw.Close()
		code, b, _ := ts.do(http.MethodPost, "/api/v1/runs", ts.token, &gz, "Content-Encoding", "gzip")
		if code != http.StatusOK || !strings.Contains(string(b), `"created":false`) {
			t.Fatalf("second upload: %d %s", code, b)
		}
		got, err := ts.client.RunFile(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := sp.Run()
		if !reflect.DeepEqual(got.Docs, want.Docs) || !reflect.DeepEqual(got.Items, want.Items) || got.Header.ID != id {
			t.Fatalf("%s: run file differs after the round trip", test)
		}
		meta, err := ts.client.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if meta.Records != 120 || meta.Score != res.Score || meta.Model != model {
			t.Fatalf("run JSON %+v", meta)
		}
	}
	if s := ts.state(); !strings.HasPrefix(s, "2 runs, 240 records") {
		t.Fatalf("state %s", s)
	}
	// The request log is structured and names each request.
	if !strings.Contains(ts.logs.String(), `"msg":"request","method":"POST","path":"/api/v1/runs","status":201`) {
		t.Fatalf("no structured request log line in:\n%s", ts.logs.String())
	}
}

func TestModelRoutesWithSlash(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	ctx := context.Background()
	for i := range 5 {
		sp := servertest.Spec{Seed: uint64(i), Records: 30, Started: day(1 + i)}
		if i == 3 {
			sp.Ref, sp.PR = "feature", 7
		}
		if _, err := ts.client.Upload(ctx, bytes.NewReader(sp.Body())); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{
		"/api/v1/models/" + model + "/runs",
		"/api/v1/models/" + url.PathEscape(model) + "/runs",
	} {
		code, body := ts.get(path + "?limit=2")
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		var p client.RunsPage
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Runs) != 2 || p.Runs[0].ID != "probes-4" || p.Next == "" {
			t.Fatalf("%s: page %+v", path, p)
		}
		code, body = ts.get(path + "?limit=10&cursor=" + p.Next)
		var p2 client.RunsPage
		if err := json.Unmarshal([]byte(body), &p2); err != nil || code != 200 || len(p2.Runs) != 3 || p2.Next != "" {
			t.Fatalf("%s second page: %d %s", path, code, body)
		}
	}
	for q, want := range map[string]string{
		"?ref=feature":      "probes-3",
		"?since=2026-11-04": "probes-4 probes-3",
		"?test=probes&ref=main&since=2026-11-05T00:00:00Z": "probes-4",
		"?test=fresh": "",
	} {
		code, body := ts.get("/api/v1/models/" + model + "/runs" + q)
		var p client.RunsPage
		if err := json.Unmarshal([]byte(body), &p); err != nil || code != 200 {
			t.Fatalf("%s: %d %s", q, code, body)
		}
		var ids []string
		for _, r := range p.Runs {
			ids = append(ids, r.ID)
		}
		if got := strings.Join(ids, " "); got != want {
			t.Errorf("runs%s = %q, want %q", q, got, want)
		}
	}
	base, err := ts.client.Baseline(ctx, testRepo, model, "main", runfile.TestProbes)
	if err != nil {
		t.Fatal(err)
	}
	if base.Header.ID != "probes-4" || len(base.Items) != 30 {
		t.Fatalf("baseline %s with %d items, want probes-4 with 30", base.Header.ID, len(base.Items))
	}
	if _, err := ts.client.Baseline(ctx, testRepo, model, "main", runfile.TestFresh); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("baseline of a test with no runs: %v, want ErrNotFound", err)
	}
	code, body := ts.get("/api/v1/models")
	if code != 200 || !strings.Contains(body, `"model":"`+model+`"`) || !strings.Contains(body, `"runs":5`) {
		t.Fatalf("models: %d %s", code, body)
	}
	for _, path := range []string{"/models/" + model, "/models/" + url.PathEscape(model)} {
		if code, body := ts.get(path); code != 200 || !strings.Contains(body, "<h1>"+model+"</h1>") {
			t.Fatalf("%s: %d", path, code)
		}
	}
}

func TestSettingsFlags(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	up := func(sp servertest.Spec, q string) client.UploadResult {
		t.Helper()
		code, res, body := ts.upload(sp.Body(), q)
		if code != http.StatusCreated {
			t.Fatalf("upload %s: %d %s", sp.ID, code, body)
		}
		return res
	}
	up(servertest.Spec{ID: "main-1", Seed: 1, Started: day(1)}, "")
	up(servertest.Spec{ID: "main-2", Seed: 2, Started: day(2), Engine: "llama.cpp b9999"}, "")
	res := up(servertest.Spec{ID: "pr-1", Seed: 3, Started: day(3), Ref: "feat", PR: 4}, "")
	if res.BaselineID != "main-2" || len(res.Flags) != 1 || res.Flags[0].Key != "engine" ||
		res.CompareURL != "/compare?base=main-2&head=pr-1" {
		t.Fatalf("flags not reported against the newest main run: %+v", res)
	}
	// A named baseline with the same settings: no flag.
	res = up(servertest.Spec{ID: "pr-2", Seed: 4, Started: day(3), Ref: "feat", PR: 4}, "?baseline=main-1")
	if res.BaselineID != "main-1" || len(res.Flags) != 0 {
		t.Fatalf("named baseline: %+v", res)
	}
	// The flag shows on every page that shows the run.
	for _, path := range []string{"/runs/pr-1", "/models/" + model, "/compare?base=main-2&head=pr-1"} {
		code, body := ts.get(path)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		if !strings.Contains(body, "engine") || !strings.Contains(body, "⚑") {
			t.Fatalf("%s does not show the settings flag:\n%s", path, body)
		}
	}
	code, body := ts.get("/runs/pr-2")
	if code != 200 || strings.Contains(body, `class="warn"`) {
		t.Fatalf("unflagged run shows a warning: %d", code)
	}
}

func TestCompareAPI(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 500})
	a := servertest.Spec{ID: "a", Seed: 1, Records: 300, Score: 40, Started: day(1)}
	b := servertest.Spec{ID: "b", Seed: 2, Records: 300, Score: 60, Started: day(2)}
	for _, sp := range []servertest.Spec{a, b} {
		if code, _, body := ts.upload(sp.Body(), ""); code != 201 {
			t.Fatalf("upload: %s", body)
		}
	}
	code, body := ts.get("/api/v1/compare?base=a&head=b")
	if code != 200 {
		t.Fatalf("compare: %d %s", code, body)
	}
	var got compare.Comparison
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want, err := compare.Runs(a.Run(), b.Run(), compare.Options{Resamples: 500, AllowSettingsMismatch: true, ByLevel: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Delta != want.Delta || got.CI != want.CI || got.Verdict != want.Verdict || got.N != 300 {
		t.Fatalf("server comparison %+v differs from compare.Runs %+v", got.Result, want.Result)
	}
	code, page := ts.get("/compare?base=a&head=b")
	if code != 200 || !strings.Contains(page, `id="headline"`) || !strings.Contains(page, string(want.Verdict)) {
		t.Fatalf("compare page: %d", code)
	}
	for path, wantCode := range map[string]int{
		"/api/v1/compare?base=a":              400,
		"/api/v1/compare?base=a&head=missing": 404,
		"/api/v1/compare?base=a&head=../etc":  400,
		"/compare?base=a&head=missing":        404,
	} {
		if code, body := ts.get(path); code != wantCode {
			t.Errorf("%s: %d %s, want %d", path, code, body, wantCode)
		}
	}
}
