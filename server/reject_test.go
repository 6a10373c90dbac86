package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// lines edits a valid run file line by line.
func lines(sp servertest.Spec, edit func([]string) []string) []byte {
	ls := strings.Split(strings.TrimSuffix(string(sp.Body()), "\n"), "\n")
	return []byte(strings.Join(edit(ls), "\n") + "\n")
}

// withHeader re-encodes the header after edit.
func withHeader(sp servertest.Spec, edit func(h *runfile.Header)) []byte {
	r := sp.Run()
	edit(&r.Header)
	var b bytes.Buffer
	if err := runfile.Encode(&b, r); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func TestUploadRejectsBadInput(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	ts := startServer(t, server.Config{MaxBody: limit})
	ctx := context.Background()
	// One stored run, so conflicts and "unchanged" mean something.
	stored := servertest.Spec{ID: "stored", Seed: 1, Records: 20}
	if _, err := ts.client.Upload(ctx, bytes.NewReader(stored.Body())); err != nil {
		t.Fatal(err)
	}
	otherToken, _, err := ts.st.CreateToken(ctx, "someone/else")
	if err != nil {
		t.Fatal(err)
	}
	revoked, tok, err := ts.st.CreateToken(ctx, testRepo)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.st.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	sp := servertest.Spec{ID: "new-run", Seed: 2, Records: 20}
	fresh := servertest.Spec{ID: "fresh-run", Seed: 3, Records: 20, Test: runfile.TestFresh}
	bigItems := servertest.Spec{ID: "big", Seed: 4, Records: 2000}.Body() // ~200 KB > limit

	tests := []struct {
		name  string
		body  []byte
		token string // "" uses the good token; "-" sends none
		query string
		hdr   []string
		code  int
		want  string
	}{
		{"empty body", nil, "", "", nil, 400, "empty run file"},
		{"malformed JSON header", []byte("{\"schema\": \n"), "", "", nil, 400, "line 1"},
		{"malformed record", lines(sp, func(l []string) []string { l[3] = l[3][:10]; return l }), "", "", nil, 400, "line 4"},
		{"wrong type", lines(sp, func(l []string) []string {
			l[2] = strings.Replace(l[2], `"level":`, `"level":"two","x":`, 1)
			return l
		}), "", "", nil, 400, "line 3"},
		{"header with no records", lines(sp, func(l []string) []string { return l[:1] }), "", "", nil, 400, "no records"},
		{"records of another test", lines(fresh, func(l []string) []string {
			items := strings.Split(string(sp.Body()), "\n")
			return append(l[:1], items[1:4]...)
		}), "", "", nil, 400, "not a fresh record"},
		{"two records on one line", lines(sp, func(l []string) []string { l[1] += l[2]; return l }), "", "", nil, 400, "line 2"},
		{"repeated record", lines(sp, func(l []string) []string { return append(l, l[1]) }), "", "", nil, 400, "repeats"},
		{"sql in model name", withHeader(sp, func(h *runfile.Header) { h.Model.Name = "m'); DROP TABLE runs;--" }), "", "", nil, 400, "model name"},
		{"html in model name", withHeader(sp, func(h *runfile.Header) { h.Model.Name = "<script>alert(1)</script>" }), "", "", nil, 400, "model name"},
		{"unicode in ref", withHeader(sp, func(h *runfile.Header) { h.Git.Ref = "main\u202e" }), "", "", nil, 400, "git ref"},
		{"newline in id", withHeader(sp, func(h *runfile.Header) { h.ID = "a\nb" }), "", "", nil, 400, "run id"},
		{"path trick id", withHeader(sp, func(h *runfile.Header) { h.ID = "../../etc/passwd" }), "", "", nil, 400, "run id"},
		{"shard", withHeader(sp, func(h *runfile.Header) { h.Shard = &runfile.Shard{Index: 1, Count: 2} }), "", "", nil, 400, "merge"},
		{"wrong schema", withHeader(sp, func(h *runfile.Header) { h.Schema = "other/v9" }), "", "", nil, 400, "schema"},
		{"over-size body", bigItems, "", "", nil, 413, "limit"},
		{"over-size after gunzip", gz(bigItems), "", "", nil, 413, "limit"},
		{"corrupt gzip", []byte{0x1f, 0x8b, 8, 0, 1, 2, 3}, "", "", nil, 400, "gzip"},
		{"gzip header claims but plain body", sp.Body(), "", "", []string{"Content-Encoding", "gzip"}, 400, "gzip"},
		{"no token", sp.Body(), "-", "", nil, 401, "token"},
		{"unknown token", sp.Body(), "udgci_nope", "", nil, 401, "unknown"},
		{"revoked token", sp.Body(), revoked, "", nil, 401, "revoked"},
		{"token of another repo", sp.Body(), otherToken, "", nil, 403, "someone/else"},
		{"conflicting run id", servertest.Spec{ID: "stored", Seed: 9, Records: 20}.Body(), "", "", nil, 409, "stored"},
		{"unknown baseline", sp.Body(), "", "?baseline=nope", nil, 400, "not stored"},
		{"path trick baseline", sp.Body(), "", "?baseline=..%2Fx", nil, 400, "run id"},
		{"bad base ref", sp.Body(), "", "?base_ref=a%20b", nil, 400, "base_ref"},
	}
	before := ts.state()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			token := tc.token
			switch token {
			case "":
				token = ts.token
			case "-":
				token = ""
			}
			code, body, _ := ts.do(http.MethodPost, "/api/v1/runs"+tc.query, token, bytes.NewReader(tc.body), tc.hdr...)
			if code != tc.code {
				t.Fatalf("status %d, want %d: %s", code, tc.code, body)
			}
			if msg := errorOf(t, body); !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q does not mention %q", msg, tc.want)
			}
			if after := ts.state(); after != before {
				t.Fatalf("database changed: %s -> %s", before, after)
			}
		})
	}
	if err := ts.st.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	// The server is still healthy after all of it.
	if code, body := ts.get("/healthz"); code != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("health: %d %s", code, body)
	}
}

func TestReadRejectsBadInput(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	if code, _, body := ts.upload(servertest.Spec{ID: "r1", Seed: 1, Records: 20}.Body(), ""); code != 201 {
		t.Fatalf("upload: %s", body)
	}
	tests := []struct {
		path string
		code int
		json bool
	}{
		{"/api/v1/runs/missing", 404, true},
		{"/api/v1/runs/..%2F..%2Fetc%2Fpasswd", 400, true},
		{"/api/v1/runs/..%2F..%2Fetc%2Fpasswd/records", 400, true},
		{"/api/v1/runs/%27%20OR%201%3D1--", 400, true},
		{"/api/v1/runs/r1%00", 400, true},
		{"/api/v1/runs/missing/records", 404, true},
		{"/api/v1/models/" + model + "/nothing", 404, true},
		{"/api/v1/models/a%27b/runs", 400, true},
		{"/api/v1/models/" + model + "/runs?limit=0", 400, true},
		{"/api/v1/models/" + model + "/runs?limit=x", 400, true},
		{"/api/v1/models/" + model + "/runs?cursor=forged", 400, true},
		{"/api/v1/models/" + model + "/runs?since=yesterday", 400, true},
		{"/api/v1/models/" + model + "/runs?test=other", 400, true},
		{"/api/v1/models/" + model + "/baseline", 400, true},
		{"/api/v1/models/" + model + "/baseline?test=fresh", 404, true},
		{"/api/v1/nothing", 404, true},
		{"/runs/missing", 404, false},
		{"/runs/..%2F..%2Fetc%2Fpasswd", 400, false},
		{"/models/no/such-model", 404, false},
		{"/models/" + model + "?ref=%3Cscript%3E", 400, false},
		{"/nothing/here", 404, false},
	}
	for _, tc := range tests {
		code, body, hdr := ts.do(http.MethodGet, tc.path, "", nil)
		if code != tc.code {
			t.Errorf("%s: status %d, want %d: %s", tc.path, code, tc.code, body)
			continue
		}
		isJSON := strings.HasPrefix(hdr.Get("Content-Type"), "application/json")
		if isJSON != tc.json {
			t.Errorf("%s: content type %s", tc.path, hdr.Get("Content-Type"))
		}
		if tc.json {
			errorOf(t, body)
		} else if !strings.Contains(string(body), "<h1>") {
			t.Errorf("%s: not an HTML error page: %s", tc.path, body)
		}
	}
}

func TestPrivateServerNeedsToken(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{Private: true})
	if code, _, body := ts.upload(servertest.Spec{ID: "r1", Seed: 1, Records: 20}.Body(), ""); code != 201 {
		t.Fatalf("upload: %s", body)
	}
	for _, path := range []string{"/", "/models/" + model, "/runs/r1", "/api/v1/runs/r1", "/api/v1/models"} {
		code, _, hdr := ts.do(http.MethodGet, path, "", nil)
		if code != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d, want 401", path, code)
		}
		if !strings.HasPrefix(path, "/api/") && hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate for the browser", path)
		}
		if code, _, _ := ts.do(http.MethodGet, path, ts.token, nil); code != 200 {
			t.Errorf("%s with a bearer token: %d", path, code)
		}
		req, _ := http.NewRequest(http.MethodGet, ts.url+path, nil)
		req.SetBasicAuth("me", ts.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s with basic auth: %d", path, resp.StatusCode)
		}
	}
	if code, _ := ts.get("/healthz"); code != 200 {
		t.Errorf("health needs no token: %d", code)
	}
	// A public server's reads need none.
	pub := startServer(t, server.Config{})
	code, body := pub.get("/api/v1/models")
	var v map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("public read: %d %s", code, body)
	}
}
