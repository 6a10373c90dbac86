package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

func TestRunPageShowsContamination(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 200})
	run := servertest.Spec{ID: "scanned-1", Test: runfile.TestProbes, Seed: 3, Records: 40}.Run()
	run.Header.Contamination = &runfile.Contamination{Report: "contamination.json", SHA256: strings.Repeat("ab", 32), N: 13,
		Checked: 40, IDs: []string{run.Items[2].ID, run.Items[9].ID}}
	var body strings.Builder
	if err := runfile.Encode(&body, run); err != nil {
		t.Fatal(err)
	}
	if code, _, resp := ts.upload([]byte(body.String()), ""); code != 201 {
		t.Fatalf("upload: %d %s", code, resp)
	}
	code, page := ts.get("/runs/scanned-1")
	want := `<dd id="contamination">2 of 40 found in the training data, scored (13-grams, scan contamination.json)</dd>`
	if code != 200 || !strings.Contains(page, want) {
		t.Errorf("run page (%d) lacks %q", code, want)
	}
	code, js := ts.get("/api/v1/runs/scanned-1")
	var got struct {
		Header runfile.Header `json:"header"`
	}
	if code != 200 || json.Unmarshal([]byte(js), &got) != nil || got.Header.Contamination == nil || len(got.Header.Contamination.IDs) != 2 {
		t.Errorf("API run (%d) does not keep the scan's findings: %s", code, js[:min(len(js), 300)])
	}
}
