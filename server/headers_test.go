package server_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// TestSecurityHeaders: every response carries a CSP that allows only the
// layout's own inline style (by its hash), nosniff and no framing; the
// logged address ignores X-Forwarded-For unless the proxy is trusted; and
// upload answers never echo the Host header (issue 13, case 9).
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	if code, _, body := ts.upload(servertest.Spec{ID: "r1", Seed: 1, Records: 20}.Body(), ""); code != 201 {
		t.Fatalf("upload: %s", body)
	}
	for _, path := range []string{"/", "/runs/r1", "/models/" + model, "/api/v1/runs/r1", "/healthz", "/nothing", "/api/v1/runs/none"} {
		code, body, hdr := ts.do(http.MethodGet, path, "", nil)
		csp := hdr.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			hdr.Get("X-Content-Type-Options") != "nosniff" || hdr.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s (%d): headers %v", path, code, hdr)
		}
		// A page's inline style is the one the policy allows by hash.
		if _, rest, ok := strings.Cut(string(body), "<style>"); ok {
			style, _, _ := strings.Cut(rest, "</style>")
			sum := sha256.Sum256([]byte(style))
			if want := "style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q does not allow its own style (%s)", path, csp, want)
			}
		}
	}

	// The Host header is the client's: upload answers carry paths.
	code, b, _ := ts.do(http.MethodPost, "/api/v1/runs", ts.token, bytes.NewReader(servertest.Spec{ID: "r2", Seed: 2, Records: 20}.Body()),
		"Host", "evil.example", "X-Forwarded-For", "203.0.113.9")
	var res client.UploadResult
	if err := json.Unmarshal(b, &res); err != nil || code != 201 || res.URL != "/runs/r2" || strings.Contains(string(b), "evil.example") {
		t.Fatalf("upload answer %d %s", code, b)
	}
	if strings.Contains(ts.logs.String(), "203.0.113.9") || !strings.Contains(ts.logs.String(), `"remote":"127.0.0.1"`) {
		t.Errorf("X-Forwarded-For was trusted without --trust-proxy")
	}
	// The client resolves the paths against the server it talks to.
	r3, err := ts.client.Upload(t.Context(), bytes.NewReader(servertest.Spec{ID: "r3", Seed: 3, Records: 20}.Body()))
	if err != nil || r3.URL != ts.url+"/runs/r3" {
		t.Fatalf("client upload URL %q, %v", r3.URL, err)
	}

	pub := startServer(t, server.Config{PublicURL: "https://evals.example.org/", TrustProxy: true})
	code, b, _ = pub.do(http.MethodPost, "/api/v1/runs", pub.token, bytes.NewReader(servertest.Spec{ID: "p1", Seed: 1, Records: 20}.Body()),
		"Host", "evil.example", "X-Forwarded-For", "203.0.113.9")
	if err := json.Unmarshal(b, &res); err != nil || code != 201 || res.URL != "https://evals.example.org/runs/p1" {
		t.Fatalf("upload answer with --public-url: %d %s", code, b)
	}
	if !strings.Contains(pub.logs.String(), `"remote":"203.0.113.9"`) {
		t.Errorf("X-Forwarded-For from a loopback proxy not logged with --trust-proxy")
	}
}
