package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"html"
	"mime/multipart"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/audit/audittest"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// auditOf judges synthetic runs of the model at the revision (and commit)
// of seed's servertest runs: an artifact that lost about fifteen points.
func auditOf(t *testing.T, repo string, seed uint64) (*audit.Report, audit.RunFiles) {
	t.Helper()
	h := servertest.Spec{Seed: seed, Repo: repo}.Header()
	h.Model.File = "smollm2-135m"
	return audittest.Judged(t, audittest.Spec{Model: h.Model, Git: h.Git, Items: 420, Seed: seed, BPBRise: 0.02, Quantized: "q4_0",
		KL: audit.KL{Tokens: 12345, Mean: 0.0213, P99: 0.41, Max: 2.5, SameTop: 0.9612}})
}

// auditUpload is the upload of a report (any JSON value, or its bytes)
// with its run files.
func auditUpload(t *testing.T, report any, runs audit.RunFiles) client.AuditUpload {
	t.Helper()
	up, err := client.NewAuditUpload(report, runs.ByName())
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := report.([]byte); ok {
		up.Report = b
	}
	return up
}

// multipartOf is an audit upload's body and content type, as the client
// sends it.
func multipartOf(t *testing.T, up client.AuditUpload) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	names := []string{client.AuditReportPart}
	for _, n := range audit.RunFileNames {
		names = append(names, n)
	}
	for _, n := range names {
		data, ok := up.Runs[n]
		if n == client.AuditReportPart {
			data, ok = up.Report, true
		}
		if !ok {
			continue
		}
		w, _ := mw.CreateFormFile(n, n)
		w.Write(data)
	}
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

func seedCommit(t *testing.T, ts *testServer, seed uint64) []string {
	t.Helper()
	var ids []string
	for _, test := range []string{runfile.TestFresh, runfile.TestProbes} {
		sp := servertest.Spec{Test: test, Seed: seed, Records: 60}
		if code, res, body := ts.upload(sp.Body(), ""); code != 201 {
			t.Fatalf("seed %s: %d %s", sp.ID, code, body)
		} else {
			ids = append(ids, res.ID)
		}
	}
	return ids
}

func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An audit uploaded through the client is stored once, filed under the
// runs of its commit, and served back as it was sent.
func TestAuditUploadStoresAndServes(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	runs := seedCommit(t, ts, 5)
	rep, files := auditOf(t, testRepo, 5)
	ctx := context.Background()
	up, err := ts.client.UploadAudit(ctx, auditUpload(t, rep, files))
	if err != nil {
		t.Fatal(err)
	}
	if !up.Created || up.Verdict != "fail" || up.Model != model || up.Repo != testRepo || !reflect.DeepEqual(up.Runs, runs) ||
		up.URL != ts.url+"/audits/"+up.ID {
		t.Fatalf("upload answer %+v, want a new failed audit filed beside runs %v", up, runs)
	}
	again, err := ts.client.UploadAudit(ctx, auditUpload(t, rep, files))
	if err != nil || again.Created || again.ID != up.ID {
		t.Fatalf("the same report again: %+v, %v; want the stored %s", again, err, up.ID)
	}
	got, err := ts.client.Audit(ctx, up.ID)
	if err != nil {
		t.Fatal(err)
	}
	back, err := audit.Decode(bytes.NewReader(got.Report), "served")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Section(), rep.Section()) || got.Verdict != "fail" || got.SHA != rep.Git.SHA {
		t.Errorf("served audit %+v renders otherwise than the uploaded report", got)
	}
	if as, err := ts.st.ModelAudits(ctx, testRepo, model); err != nil || len(as) != 1 {
		t.Errorf("%d audits stored (%v), want 1", len(as), err)
	}
}

// Hostile or broken audit uploads are refused with a 4xx naming the
// problem, and leave the stored audit and runs as they were.
func TestAuditUploadRefused(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{MaxAuditBody: 1 << 20})
	seedCommit(t, ts, 5)
	goodRep, files := auditOf(t, testRepo, 5)
	good := jsonOf(t, goodRep)
	post := func(token string, report []byte) (int, []byte) {
		ctype, body := multipartOf(t, auditUpload(t, report, files))
		code, b, _ := ts.do(http.MethodPost, "/api/v1/audits", token, bytes.NewReader(body), "Content-Type", ctype)
		return code, b
	}
	if code, b := post(ts.token, good); code != 201 {
		t.Fatalf("good audit: %d %s", code, b)
	}
	ctx := context.Background()
	other, _, err := ts.st.CreateToken(ctx, "someone/else")
	if err != nil {
		t.Fatal(err)
	}
	before := ts.state()
	stored, err := ts.st.ModelAudits(ctx, testRepo, model)
	if err != nil || len(stored) != 1 {
		t.Fatalf("%d audits stored, %v", len(stored), err)
	}
	var m map[string]any
	if err := json.Unmarshal(good, &m); err != nil {
		t.Fatal(err)
	}
	edited := func(f func(map[string]any)) []byte {
		var c map[string]any
		json.Unmarshal(good, &c)
		f(c)
		return jsonOf(t, c)
	}
	ctype, whole := multipartOf(t, auditUpload(t, append(append([]byte{}, good...), bytes.Repeat([]byte(" "), 4<<20)...), files))
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(whole)
	zw.Close()
	if code, b, _ := ts.do(http.MethodPost, "/api/v1/audits", ts.token, bytes.NewReader(bomb.Bytes()), "Content-Type", ctype, "Content-Encoding", "gzip"); code != 413 {
		t.Errorf("gzip bomb: %d %s, want 413", code, b)
	}
	if code, b, _ := ts.do(http.MethodPost, "/api/v1/audits", ts.token, bytes.NewReader(good), "Content-Type", "application/json"); code != 400 || !strings.Contains(string(b), "run files") {
		t.Errorf("a report without its run files: %d %s, want 400", code, b)
	}
	for _, tc := range []struct {
		name  string
		token string
		body  []byte
		code  int
		want  string
	}{
		{"no token", "", good, 401, "a token is needed"},
		{"unknown token", "udg_nope", good, 401, "unknown or revoked token"},
		{"another repository's token", other, good, 403, "this token uploads for someone/else only"},
		{"oversize", ts.token, append(append([]byte{}, good...), bytes.Repeat([]byte(" "), 1100<<10)...), 413, "over the limit of 1048576 bytes"},
		{"not JSON", ts.token, []byte("<html>hello</html>"), 400, "invalid character"},
		{"cut short", ts.token, good[:len(good)/2], 400, "unexpected EOF"},
		{"two reports", ts.token, append(append(append([]byte{}, good...), '\n'), good...), 400, "more after"},
		{"unknown field", ts.token, edited(func(c map[string]any) { c["score"] = 99 }), 400, `unknown field "score"`},
		{"verdict edited", ts.token, edited(func(c map[string]any) { c["verdict"] = "pass"; delete(c, "reasons") }), 400, "verdict"},
		{"no repository", ts.token, edited(func(c map[string]any) { c["git"] = map[string]any{"pr": nil} }), 400, "git.repo is empty"},
		{"bad model name", ts.token, edited(func(c map[string]any) { c["reference"].(map[string]any)["name"] = "../etc" }), 400, "reference: not what the audit's run files give"},
		// Issue 39: names bounded and plain, KL bounded to what is possible.
		{"a 20,000-character artifact file", ts.token, edited(func(c map[string]any) { c["artifact"].(map[string]any)["file"] = strings.Repeat("q", 20000) }), 400, "artifact.file: 20000 bytes"},
		{"a bidi override in the dtype", ts.token, edited(func(c map[string]any) { c["artifact"].(map[string]any)["dtype"] = "q4\u202e0" }), 400, "artifact.dtype"},
		{"a control character in the file", ts.token, edited(func(c map[string]any) { c["artifact"].(map[string]any)["file"] = "a\x1b[2Jb.gguf" }), 400, "control or formatting character"},
		{"a KL mean above its max", ts.token, edited(func(c map[string]any) { c["kl"].(map[string]any)["mean"] = 7.5 }), 400, "kl"},
		{"a KL over no tokens", ts.token, edited(func(c map[string]any) { c["kl"].(map[string]any)["tokens"] = 0 }), 400, "kl"},
	} {
		code, b := post(tc.token, tc.body)
		if code != tc.code || !strings.Contains(errorOf(t, b), tc.want) {
			t.Errorf("%s: %d %s, want %d naming %q", tc.name, code, b, tc.code, tc.want)
		}
	}
	after, err := ts.st.ModelAudits(ctx, testRepo, model)
	if err != nil || !reflect.DeepEqual(after, stored) || ts.state() != before {
		t.Errorf("refused uploads changed what is stored: %d audits (%v), %s (was %s)", len(after), err, ts.state(), before)
	}
	for path, want := range map[string]int{"/api/v1/audits/audit-0000": 404, "/api/v1/audits/..%2Fx": 400, "/audits/audit-0000": 404} {
		if code, _ := ts.get(path); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
}

// tableCells are the texts of the cells of each body row of the table
// whose class attribute contains class.
func tableCells(t *testing.T, dom, class string) [][]string {
	t.Helper()
	return rowsOf(t, dom, `<table class="[^"]*\b`+class+`\b[^"]*">`)
}

// rowsOf are the texts of the cells of each body row of the first table
// whose opening tag matches open (a regular expression).
func rowsOf(t *testing.T, page, open string) [][]string {
	t.Helper()
	m := regexp.MustCompile(`(?s)` + open + `.*?<tbody>(.*?)</tbody>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no table %s in the page", open)
	}
	var rows [][]string
	for _, tr := range regexp.MustCompile(`(?s)<tr[^>]*>(.*?)</tr>`).FindAllStringSubmatch(m[1], -1) {
		var row []string
		for _, td := range regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(tr[1], -1) {
			row = append(row, html.UnescapeString(td[1]))
		}
		rows = append(rows, row)
	}
	return rows
}

// markdownRows are the body rows of each Markdown table, in order.
func markdownRows(md string) [][][]string {
	var tables [][][]string
	var cur [][]string
	lines := strings.Split(md, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "|---") {
			continue
		}
		if !strings.HasPrefix(l, "| ") {
			if cur != nil {
				tables = append(tables, cur)
				cur = nil
			}
			continue
		}
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "|---") {
			cur = [][]string{} // the header row
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "| "), " |"), " | ")
		for k, c := range cells {
			cells[k] = strings.Trim(c, "*")
		}
		cur = append(cur, cells)
	}
	return tables
}

// The run page of the audited commit, in a real browser, shows the audit
// with exactly the numbers of the terminal table and the Markdown section
// (the PR comment's), as do the audit's own page and the model's list.
func TestChromiumRunPageShowsAudit(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	ts := startServer(t, server.Config{})
	runs := seedCommit(t, ts, 7)
	rep, files := auditOf(t, testRepo, 7)
	up, err := ts.client.UploadAudit(context.Background(), auditUpload(t, rep, files))
	if err != nil {
		t.Fatal(err)
	}
	var md, text strings.Builder
	if err := audit.RenderMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := audit.RenderText(&text, rep); err != nil {
		t.Fatal(err)
	}
	tables := markdownRows(md.String())
	if len(tables) != 3 {
		t.Fatalf("%d tables in the Markdown section, want 3:\n%s", len(tables), md.String())
	}
	for _, path := range []string{"/runs/" + runs[0], "/runs/" + runs[1], "/audits/" + up.ID} {
		dom := string(runChromium(t, bin, "--dump-dom", ts.url+path))
		for i, class := range []string{"audit-summary", "audit-types", "audit-levels"} {
			got := tableCells(t, dom, class)
			if !reflect.DeepEqual(got, tables[i]) {
				t.Errorf("%s: table %s shows\n%q\nthe Markdown section\n%q", path, class, got, tables[i])
			}
			for _, row := range got {
				for _, c := range row {
					if !strings.Contains(text.String(), c) {
						t.Errorf("%s: cell %q is not in the terminal table", path, c)
					}
				}
			}
		}
		s := rep.Section()
		for _, line := range []string{s.Title, s.KL, s.Verdict} {
			if !strings.Contains(html.UnescapeString(dom), line) || !strings.Contains(text.String(), line) {
				t.Errorf("%s: line %q is not on the page and in the terminal table", path, line)
			}
		}
	}
	// Legible on a phone too, the audit section open on the run page.
	proxy := phoneProxy(t, ts.url)
	checkPhone(t, bin, proxy, "/runs/"+runs[1], 3)
	checkPhone(t, bin, proxy, "/audits/"+up.ID, 1)
	// A run of another commit shows no audit; the model's page lists it.
	other := servertest.Spec{Test: runfile.TestProbes, Seed: 8, Records: 60}
	if code, _, body := ts.upload(other.Body(), ""); code != 201 {
		t.Fatal(body)
	}
	if _, page := ts.get("/runs/" + other.Run().Header.ID); strings.Contains(page, "audit-summary") {
		t.Error("a run of another commit shows the audit")
	}
	if _, page := ts.get("/models/" + model); !strings.Contains(page, `href="/audits/`+up.ID+`"`) || !strings.Contains(page, `class="regressed">fail<`) {
		t.Error("the model's page does not list the failed audit")
	}
}

// On a private server an audit, like a run, is read with a token of its
// own repository only: another repository's token finds nothing.
func TestAuditPrivateScope(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{Private: true})
	rep, files := auditOf(t, testRepo, 2)
	ctype, body := multipartOf(t, auditUpload(t, rep, files))
	code, b, _ := ts.do(http.MethodPost, "/api/v1/audits", ts.token, bytes.NewReader(body), "Content-Type", ctype)
	if code != 201 {
		t.Fatalf("upload: %d %s", code, b)
	}
	var up struct{ ID string }
	if err := json.Unmarshal(b, &up); err != nil {
		t.Fatal(err)
	}
	other, _, err := ts.st.CreateToken(context.Background(), "someone/else")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/api/v1/audits/" + up.ID, ts.token, 200},
		{"/audits/" + up.ID, ts.token, 200},
		{"/api/v1/audits/" + up.ID, other, 404},
		{"/audits/" + up.ID, other, 404},
		{"/api/v1/audits/" + up.ID, "", 401},
	} {
		if code, b, _ := ts.do(http.MethodGet, c.path, c.token, nil); code != c.want {
			t.Errorf("GET %s: %d %s, want %d", c.path, code, b, c.want)
		}
	}
}
