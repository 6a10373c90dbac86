package server_test

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

func TestPages(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 200})
	seedHistory(t, ts, 12)
	other := servertest.Spec{ID: "other-1", Model: "EleutherAI/pythia-70m", Test: runfile.TestFresh, Seed: 5, Records: 40, Unverified: "pre-tokenizer Split(x) unmatched"}
	if code, _, body := ts.upload(other.Body(), ""); code != 201 {
		t.Fatalf("upload: %s", body)
	}
	tests := []struct {
		path string
		want []string
		rows map[string]int // table id -> body rows
	}{
		{"/", []string{`href="/repos/udgamlabs/smol-train/models/HuggingFaceTB/SmolLM2-135M"`, `href="/repos/udgamlabs/smol-train/models/EleutherAI/pythia-70m"`, `<svg class="spark"`},
			map[string]int{"models": 3}},
		{"/models/" + model, []string{`<svg class="chart"`, "bits per byte (lower is better)", "probe accuracy", `<option value="exp/lr-sweep-3">`},
			map[string]int{"runs-fresh": 12, "runs-probes": 12}},
		{"/models/" + model + "?test=fresh&ref=main", []string{`<option value="main" selected>`},
			map[string]int{"runs-fresh": 9}},
		{"/runs/probes-0006", []string{"⚑ Settings differ from the baseline", "llama.cpp b4100 (rebuilt)", "compare with baseline", "By type and level"},
			map[string]int{"groups": 7, "levels": 21}},
		{"/runs/fresh-0001", []string{"By source", "wikipedia", "arxiv", "window / stride"},
			map[string]int{"groups": 2}},
		{"/runs/other-1", []string{"UNVERIFIED: pre-tokenizer Split(x) unmatched", "unverified tokenizer"}, nil},
		{"/compare?base=probes-0004&head=probes-0007", []string{"probe accuracy", "95% interval of Δ", "exp/lr-sweep-7 (#107)", "Records that moved most"},
			map[string]int{"headline": 1, "bygroup": 7}},
	}
	rowRE := regexp.MustCompile(`(?s)<table[^>]*id="([^"]+)".*?<tbody>(.*?)</tbody>`)
	for _, tc := range tests {
		code, body := ts.get(tc.path)
		if code != 200 {
			t.Errorf("%s: %d", tc.path, code)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q", tc.path, w)
			}
		}
		got := map[string]int{}
		for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
			got[m[1]] = strings.Count(m[2], "<tr>")
		}
		for id, n := range tc.rows {
			if got[id] != n {
				t.Errorf("%s: table %s has %d rows, want %d", tc.path, id, got[id], n)
			}
		}
		// Offline behind a firewall: nothing is loaded from elsewhere.
		for _, bad := range []string{"<script", "<link", "src=", "@import", "url("} {
			if strings.Contains(body, bad) {
				t.Errorf("%s contains %q", tc.path, bad)
			}
		}
	}
}

// A run scored on the smoke sample is marked on the history page and the
// run page; the benchmark's runs are not (issue 14).
func TestPagesMarkSmokeRuns(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	const m = "acme/smoky"
	for i, smoke := range []bool{false, true, false} {
		r := servertest.Spec{ID: "smoke-" + strconv.Itoa(i), Model: m, Seed: uint64(i + 1), Records: 30}.Run()
		r.Header.Dataset.Smoke = smoke
		var b bytes.Buffer
		if err := runfile.Encode(&b, r); err != nil {
			t.Fatal(err)
		}
		if code, _, body := ts.upload(b.Bytes(), ""); code != 201 {
			t.Fatalf("upload %d: %s", i, body)
		}
	}
	code, page := ts.get("/repos/" + testRepo + "/models/" + m)
	if code != 200 {
		t.Fatalf("history page: %d %s", code, page)
	}
	if n := strings.Count(page, `class="flag smoke"`); n != 1 {
		t.Errorf("history page marks %d runs as smoke, want 1", n)
	}
	for id, want := range map[string]bool{"smoke-0": false, "smoke-1": true} {
		_, page := ts.get("/runs/" + id)
		if got := strings.Contains(page, "smoke sample — not the benchmark"); got != want {
			t.Errorf("run page %s marks smoke %v, want %v", id, got, want)
		}
	}
}
