package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/server/client"
)

// The client reads the server's error body and its relative URLs; the
// server's own tests run it against the real server.
func TestClientAnswers(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			if r.Header.Get("Authorization") != "Bearer tok" || r.URL.Query().Get("base_ref") != "dev" {
				http.Error(w, `{"error":"no token"}`, http.StatusUnauthorized)
				return
			}
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"id":"r1","url":"/runs/r1","compare_url":"https://x.example/compare","score":{"metric":"bpb","value":1.5,"lo":1,"hi":2}}`))
		case strings.HasSuffix(r.URL.Path, "/baseline"):
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"no baseline on dev"}`))
		default:
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("upstream down\n"))
		}
	}))
	defer hs.Close()
	ctx := context.Background()
	c := &client.Client{BaseURL: hs.URL + "/", Token: "tok"}

	res, err := c.UploadWith(ctx, strings.NewReader("{}\n"), client.UploadOptions{BaseRef: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	if res.URL != hs.URL+"/runs/r1" || res.CompareURL != "https://x.example/compare" || res.Score != (client.Score{Metric: "bpb", Value: 1.5, Lo: 1, Hi: 2}) {
		t.Errorf("upload answer = %+v", res)
	}

	_, err = c.Baseline(ctx, "acme/train", "m", "dev", "fresh")
	if !errors.Is(err, client.ErrNotFound) || !strings.Contains(err.Error(), "no baseline on dev") {
		t.Errorf("baseline: err = %v, want ErrNotFound with the server's message", err)
	}
	if _, err := c.Baseline(ctx, "acme", "m", "dev", "fresh"); err == nil || !strings.Contains(err.Error(), "OWNER/NAME") {
		t.Errorf("baseline of a bad repository: err = %v", err)
	}

	_, err = c.Run(ctx, "r1")
	var se *client.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadGateway || se.Msg != "upstream down" {
		t.Errorf("run: err = %v, want StatusError 502 upstream down", err)
	}
}

func TestModelPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ repo, model, want string }{
		{"acme/train", "HuggingFaceTB/SmolLM2-135M", "/repos/acme/train/models/HuggingFaceTB/SmolLM2-135M"},
		{"", "m 1", "/models/m%201"},
	} {
		if got := client.ModelPath(tc.repo, tc.model); got != tc.want {
			t.Errorf("ModelPath(%q, %q) = %q, want %q", tc.repo, tc.model, got, tc.want)
		}
	}
}
