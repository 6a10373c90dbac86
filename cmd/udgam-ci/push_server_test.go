package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// TestBigHTMLHeaderRoundTrips: a 3 MiB header of '<' is written, pushed,
// stored, served and compared without growing past the 16 MiB line limit
// (HTML escaping once made it 18 MiB, so /compare, compare and push
// failed; issue 13, case 6).
func TestBigHTMLHeaderRoundTrips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bg := context.Background()
	live := servertest.Start(t, server.Config{CompareResamples: 200}, "udgamlabs/smol-train")
	token := live.Tokens[0]

	big := strings.Repeat("<", 3<<20)
	var files []string
	for i, id := range []string{"html-base", "html-head"} {
		r := servertest.Spec{ID: id, Seed: uint64(i), Records: 40}.Run()
		r.Header.Model.File = big
		path := filepath.Join(dir, id+".jsonl")
		if err := runfile.WriteFile(path, r); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(path); fi.Size() > 4<<20 {
			t.Fatalf("run file %s is %d bytes for a 3 MiB header", path, fi.Size())
		}
		files = append(files, path)
	}
	e, _, errb := serverTestEnv(bg, nil)
	if code := run(e, append([]string{"push", "--server", live.URL, "--token", token}, files...)); code != 0 {
		t.Fatalf("push: exit %d: %s", code, errb.String())
	}
	// Served back whole, then compared from the served files.
	var served []string
	for _, id := range []string{"html-base", "html-head"} {
		resp, err := http.Get(live.URL + "/api/v1/runs/" + id + "/records")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte(big)) {
			t.Fatalf("records of %s: %d, %d bytes", id, resp.StatusCode, len(b))
		}
		path := filepath.Join(dir, id+".served.jsonl")
		os.WriteFile(path, b, 0o644)
		served = append(served, path)
	}
	e, out, errb := serverTestEnv(bg, nil)
	if code := run(e, []string{"compare", served[0], served[1], "--json", "--resamples", "200", "--fail-on", "never"}); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errb.String())
	}
	var cmp struct {
		Metric string `json:"metric"`
		N      int    `json:"n"`
	}
	if err := json.Unmarshal(out.Bytes(), &cmp); err != nil || cmp.Metric != "accuracy" || cmp.N != 40 {
		t.Fatalf("compare --json: %v %+v", err, cmp)
	}
	for _, path := range []string{"/api/v1/compare?base=html-base&head=html-head", "/compare?base=html-base&head=html-head"} {
		resp, err := http.Get(live.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
}

// TestPushIsScopedToRepository: runs pushed by another repository's token
// under acme's model name, on main and newer, are never what acme's push
// is checked against (issue 13, case 2).
func TestPushIsScopedToRepository(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bg := context.Background()
	live := servertest.Start(t, server.Config{CompareResamples: 200}, "acme/train", "evil/repo")
	push := func(token string, sp servertest.Spec) string {
		t.Helper()
		path := filepath.Join(dir, sp.ID+".jsonl")
		if err := os.WriteFile(path, sp.Body(), 0o644); err != nil {
			t.Fatal(err)
		}
		e, out, errb := serverTestEnv(bg, nil)
		if code := run(e, []string{"push", path, "--server", live.URL, "--token", token, "--json"}); code != 0 {
			t.Fatalf("push %s: exit %d: %s", sp.ID, code, errb.String())
		}
		return out.String()
	}
	const m = "acme/m1"
	push(live.Tokens[0], servertest.Spec{ID: "acme-main", Repo: "acme/train", Model: m, Seed: 1, Records: 30})
	push(live.Tokens[1], servertest.Spec{ID: "evil-main", Repo: "evil/repo", Model: m, Seed: 2, Records: 30, Engine: "evil engine"})
	out := push(live.Tokens[0], servertest.Spec{ID: "acme-pr", Repo: "acme/train", Model: m, Seed: 3, Records: 30, Ref: "feat", PR: 2})
	var res client.UploadResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.BaselineID != "acme-main" || len(res.Flags) != 0 {
		t.Fatalf("acme's push checked against %q with flags %v (%v), want acme-main and none", res.BaselineID, res.Flags, err)
	}
}

// anchor pin pins a pushed run as its model's anchor with a drift
// budget, through the real server; a run id the token's repository does
// not hold fails with the server's reason.
func TestAnchorPinCommand(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	live := servertest.Start(t, server.Config{CompareResamples: 200}, "udgamlabs/smol-train", "evil/repo")
	path := filepath.Join(t.TempDir(), "release.jsonl")
	if err := runfile.WriteFile(path, servertest.Spec{ID: "fresh-release", Test: runfile.TestFresh, Records: 40}.Run()); err != nil {
		t.Fatal(err)
	}
	e, _, errb := serverTestEnv(bg, nil)
	if code := run(e, []string{"push", "--server", live.URL, "--token", live.Tokens[0], path}); code != 0 {
		t.Fatalf("push: exit %d: %s", code, errb.String())
	}
	e, out, errb := serverTestEnv(bg, nil)
	if code := run(e, []string{"anchor", "pin", "fresh-release", "--max-drift", "0.01", "--server", live.URL, "--token", live.Tokens[0]}); code != 0 {
		t.Fatalf("anchor pin: exit %d: %s", code, errb.String())
	}
	if want := "pinned run fresh-release as the fresh anchor of HuggingFaceTB/SmolLM2-135M in udgamlabs/smol-train (drift budget 0.0100 bpb)\n"; out.String() != want {
		t.Errorf("anchor pin printed %q, want %q", out.String(), want)
	}
	a, err := (&client.Client{BaseURL: live.URL}).AnchorOf(bg, "udgamlabs/smol-train", "HuggingFaceTB/SmolLM2-135M", runfile.TestFresh)
	if err != nil || a.Run.ID != "fresh-release" || a.MaxDrift == nil || *a.MaxDrift != 0.01 {
		t.Fatalf("anchor %+v: %v", a, err)
	}
	e, _, errb = serverTestEnv(bg, nil)
	if code := run(e, []string{"anchor", "pin", "fresh-release", "--server", live.URL, "--token", live.Tokens[1]}); code != 1 || !strings.Contains(errb.String(), "not stored for evil/repo") {
		t.Errorf("another repository's token: exit %d: %s", code, errb.String())
	}
	e, _, errb = serverTestEnv(bg, nil)
	if code := run(e, []string{"anchor", "pin", "fresh-release", "--max-drift", "-1", "--server", live.URL, "--token", live.Tokens[0]}); code != 2 || !strings.Contains(errb.String(), `"-1" is not a number >= 0`) {
		t.Errorf("negative budget: exit %d: %s", code, errb.String())
	}
}
