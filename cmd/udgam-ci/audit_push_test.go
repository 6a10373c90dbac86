package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/audit/audittest"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// audit push checks each report, uploads it to a real server and prints
// its URL; the server serves it back. A report that was edited is named
// and nothing is sent; a wrong token is the server's 401.
func TestAuditPush(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live := servertest.Start(t, server.Config{CompareResamples: 200}, "acme/train")
	git := runfile.Git{Repo: "acme/train", SHA: strings.Repeat("a", 40), Ref: "main"}
	rep, files := audittest.Judged(t, audittest.Spec{Model: runfile.Model{Name: "acme/m", Revision: strings.Repeat("b", 40)}, Git: git,
		Items: 200, PRef: 0.6, PArt: 0.6, Seed: 2, Quantized: "q8_0", KL: audit.KL{Tokens: 10, Mean: 0.001, P99: 0.01, Max: 0.02, SameTop: 1}})
	for name, r := range files.ByName() {
		if err := runfile.WriteFile(filepath.Join(dir, name), r); err != nil {
			t.Fatal(err)
		}
	}
	good := filepath.Join(dir, "audit.json")
	b, _ := json.Marshal(rep)
	if err := os.WriteFile(good, b, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "edited.json")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(b), `"verdict":"pass"`, `"verdict":"fail"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	bg := context.Background()

	e, _, errb := serverTestEnv(bg, nil)
	if code := run(e, []string{"audit", "push", "--server", live.URL, "--token", live.Tokens[0], good, bad}); code != 1 || !strings.Contains(errb.String(), "edited.json") || !strings.Contains(errb.String(), "verdict") {
		t.Fatalf("an edited report: exit %d: %s", code, errb.String())
	}
	// Issue 39: a report travels with its run files, and numbers that are
	// not what they give are named before anything is sent.
	alone := filepath.Join(t.TempDir(), "audit.json")
	os.WriteFile(alone, b, 0o644)
	e, _, errb = serverTestEnv(bg, nil)
	if code := run(e, []string{"audit", "push", "--server", live.URL, "--token", live.Tokens[0], alone}); code != 1 || !strings.Contains(errb.String(), "--runs") {
		t.Fatalf("a report without its run files: exit %d: %s", code, errb.String())
	}
	made := filepath.Join(dir, "made-up.json")
	var m map[string]any
	json.Unmarshal(b, &m)
	m["fresh"].(map[string]any)["base"] = 0.5
	mb, _ := json.Marshal(m)
	os.WriteFile(made, mb, 0o644)
	e, _, errb = serverTestEnv(bg, nil)
	if code := run(e, []string{"audit", "push", "--server", live.URL, "--token", live.Tokens[0], made}); code != 1 || !strings.Contains(errb.String(), "not what the audit's run files give") {
		t.Fatalf("a reference bpb of 0.5 its runs do not give: exit %d: %s", code, errb.String())
	}
	e, _, errb = serverTestEnv(bg, nil)
	if code := run(e, []string{"audit", "push", "--server", live.URL, "--token", "udg_wrong", good}); code != 1 || !strings.Contains(errb.String(), "401") {
		t.Fatalf("a wrong token: exit %d: %s", code, errb.String())
	}
	e, out, errb := serverTestEnv(bg, map[string]string{"UDGAM_SERVER_TOKEN": live.Tokens[0]})
	if code := run(e, []string{"audit", "push", "--server", live.URL, "--json", good}); code != 0 {
		t.Fatalf("audit push: exit %d: %s", code, errb.String())
	}
	var res client.AuditUploadResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || !res.Created || res.Verdict != "pass" || res.Model != "acme/m" || res.SHA != git.SHA {
		t.Fatalf("audit push --json: %v %+v", err, res)
	}
	got, err := (&client.Client{BaseURL: live.URL}).Audit(bg, res.ID)
	if err != nil || got.Revision != strings.Repeat("b", 40) {
		t.Fatalf("served audit %+v, %v", got, err)
	}
	if _, err := audit.Decode(strings.NewReader(string(got.Report)), "served"); err != nil {
		t.Error(err)
	}
}
