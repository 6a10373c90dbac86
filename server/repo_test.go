package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// TestModelIdentityIsRepoAndName: another repository's token cannot plant
// a baseline for acme's model, be flagged against, or be served as acme's
// baseline (issue 13, case 2); the repo-qualified routes name the model
// unambiguously whatever slashes its name holds, and the legacy ones
// answer where one repository has the model and refuse where several do.
func TestModelIdentityIsRepoAndName(t *testing.T) {
	t.Parallel()
	for _, private := range []bool{false, true} {
		t.Run(map[bool]string{false: "public", true: "private"}[private], func(t *testing.T) {
			testModelIdentity(t, private)
		})
	}
}

func testModelIdentity(t *testing.T, private bool) {
	ts := startServer(t, server.Config{Private: private})
	ctx := context.Background()
	const m1 = "acme/m1"
	acme, _, err := ts.st.CreateToken(ctx, "acme/train")
	if err != nil {
		t.Fatal(err)
	}
	evil, _, err := ts.st.CreateToken(ctx, "evil/repo")
	if err != nil {
		t.Fatal(err)
	}
	up := func(token string, sp servertest.Spec, q string) (int, client.UploadResult, string) {
		t.Helper()
		code, b, _ := ts.do(http.MethodPost, "/api/v1/runs"+q, token, strings.NewReader(string(sp.Body())))
		var res client.UploadResult
		json.Unmarshal(b, &res)
		return code, res, string(b)
	}
	mustUp := func(token string, sp servertest.Spec, q string) client.UploadResult {
		t.Helper()
		code, res, body := up(token, sp, q)
		if code != http.StatusCreated {
			t.Fatalf("upload %s: %d %s", sp.ID, code, body)
		}
		return res
	}
	mustUp(acme, servertest.Spec{ID: "acme-1", Repo: "acme/train", Model: m1, Seed: 1, Records: 30, Started: day(1)}, "")
	// evil/repo uploads a run of the same name on main, later, with other
	// settings: it is evil's own model, nobody else's baseline.
	mustUp(evil, servertest.Spec{ID: "evil-1", Repo: "evil/repo", Model: m1, Seed: 2, Records: 30, Started: day(5), Engine: "evil engine"}, "")
	// Only in acme's repository: the legacy route stays unambiguous.
	mustUp(acme, servertest.Spec{ID: "acme-solo", Repo: "acme/train", Model: "acme/solo/v2", Seed: 3, Records: 30, Started: day(1)}, "")

	res := mustUp(acme, servertest.Spec{ID: "acme-pr", Repo: "acme/train", Model: m1, Seed: 4, Records: 30, Started: day(6), Ref: "feat", PR: 3}, "")
	if res.BaselineID != "acme-1" || len(res.Flags) != 0 || res.Repo != "acme/train" {
		t.Fatalf("acme's upload checked against %q with flags %v, want acme-1 and none", res.BaselineID, res.Flags)
	}
	// Naming another repository's run as the baseline is refused as absent.
	if code, _, body := up(evil, servertest.Spec{ID: "evil-2", Repo: "evil/repo", Model: m1, Seed: 5, Records: 30, Started: day(7)}, "?baseline=acme-1"); code != 400 || !strings.Contains(body, "not stored for evil/repo") {
		t.Fatalf("evil names acme's run as baseline: %d %s", code, body)
	}

	reader := "" // a public server needs no token to read
	if private {
		reader = acme
	}
	get := func(path, token string) (int, string) {
		t.Helper()
		code, b, _ := ts.do(http.MethodGet, path, token, nil)
		return code, string(b)
	}
	c := &client.Client{BaseURL: ts.url, Token: reader}
	base, err := c.Baseline(ctx, "acme/train", m1, "main", "probes")
	if err != nil || base.Header.ID != "acme-1" {
		t.Fatalf("acme's baseline: %v %v, want acme-1", base, err)
	}
	if _, err := c.Baseline(ctx, "acme/nothing", m1, "main", "probes"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("baseline of a repository with no runs: %v", err)
	}
	type want struct {
		code int
		has  string
	}
	checks := map[string]want{
		"/api/v1/repos/acme/train/models/acme/m1/baseline?test=probes":   {200, `"id":"acme-1"`},
		"/api/v1/repos/acme/train/models/acme%2Fm1/baseline?test=probes": {200, `"id":"acme-1"`},
		"/api/v1/repos/acme/train/models/acme/m1/runs":                   {200, `"id":"acme-pr"`},
		"/api/v1/repos/acme/train/models/acme/solo/v2/runs":              {200, `"id":"acme-solo"`},
		"/api/v1/models/acme/solo/v2/runs":                               {200, `"id":"acme-solo"`},
		"/repos/acme/train/models/acme/m1":                               {200, "repository acme/train"},
		"/models/acme/solo/v2":                                           {200, "<h1>acme/solo/v2</h1>"},
		"/repos/acme/models/m1":                                          {404, ""},
		"/repos/acme/train/m1":                                           {404, ""},
		"/repos/acme%2Ftrain/x/models/m1":                                {404, ""},
		"/api/v1/repos/acme/train/models/acme/m1/nothing":                {404, ""},
		"/api/v1/repos/a%27b/train/models/acme/m1/runs":                  {400, "repository"},
		"/api/v1/repos/acme/train/models/no/such/runs":                   {200, `"runs":[]`},
	}
	if private {
		// acme's token reads acme's runs only; the legacy route means acme's.
		checks["/api/v1/models/acme/m1/baseline?test=probes"] = want{200, `"id":"acme-1"`}
		checks["/api/v1/repos/evil/repo/models/acme/m1/runs"] = want{404, ""}
		checks["/api/v1/runs/evil-1"] = want{404, ""}
		checks["/api/v1/runs/evil-1/records"] = want{404, ""}
		checks["/runs/evil-1"] = want{404, ""}
		checks["/api/v1/compare?base=acme-1&head=evil-1"] = want{404, ""}
		checks["/api/v1/models"] = want{200, `"repo":"acme/train"`}
	} else {
		checks["/api/v1/models/acme/m1/baseline?test=probes"] = want{409, "/api/v1/repos/acme/train/models/acme/m1, /api/v1/repos/evil/repo/models/acme/m1"}
		checks["/models/acme/m1"] = want{409, "2 repositories"}
		checks["/api/v1/repos/evil/repo/models/acme/m1/baseline?test=probes"] = want{200, `"id":"evil-1"`}
	}
	for path, w := range checks {
		code, body := get(path, reader)
		if code != w.code || !strings.Contains(body, w.has) {
			t.Errorf("%s: %d, want %d with %q: %.300s", path, code, w.code, w.has, body)
		}
	}
	if private {
		if _, body := get("/api/v1/models", acme); strings.Contains(body, "evil/repo") {
			t.Errorf("acme's token lists evil's models: %s", body)
		}
		if code, body := get("/", acme); code != 200 || strings.Contains(body, "evil/repo") {
			t.Errorf("acme's index: %d, lists evil/repo: %v", code, strings.Contains(body, "evil/repo"))
		}
	}
	// acme's history page lists acme's runs only.
	_, page := get("/repos/acme/train/models/"+url.PathEscape(m1), reader)
	if !strings.Contains(page, "acme-pr") || strings.Contains(page, "evil-1") {
		t.Errorf("acme's history page mixes repositories")
	}
	// The run pages link the model's repo-qualified page.
	if _, body := get("/runs/acme-1", reader); !strings.Contains(body, `href="/repos/acme/train/models/acme/m1"`) {
		t.Errorf("run page does not link the repo-qualified model page")
	}
	var ms struct{ Models []client.ModelTest }
	_, body := get("/api/v1/models", reader)
	json.Unmarshal([]byte(body), &ms)
	n := map[bool]int{false: 3, true: 2}[private] // (repo, model, test) rows
	if len(ms.Models) != n {
		t.Errorf("%d model rows, want %d: %.300s", len(ms.Models), n, body)
	}
}
