package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/store"
)

const testRepo = "udgamlabs/smol-train"

// testServer is a real server on 127.0.0.1 over a real SQLite file.
type testServer struct {
	t      testing.TB
	srv    *server.Server
	st     *store.Store
	url    string
	token  string
	client *client.Client
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startServer(t testing.TB, cfg server.Config) *testServer {
	t.Helper()
	return startServerWith(t, cfg, store.Options{})
}

// startServerWith is startServer with store options (a clock).
func startServerWith(t testing.TB, cfg server.Config, opt store.Options) *testServer {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	token, _, err := st.CreateToken(ctx, testRepo)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cfg.Store = st
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	ts := &testServer{t: t, srv: srv, st: st, url: "http://" + ln.Addr().String(), token: token, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(sctx, ln) }()
	ts.client = &client.Client{BaseURL: ts.url, Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
	t.Cleanup(func() {
		cancel()
		if err := <-ts.done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ts
}

// do sends a request with an optional token and returns status and body.
func (ts *testServer) do(method, path, token string, body io.Reader, hdr ...string) (int, []byte, http.Header) {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.url+path, body)
	if err != nil {
		ts.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1] // net/http sends req.Host, never a Host header
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

func (ts *testServer) get(path string) (int, string) {
	ts.t.Helper()
	code, b, _ := ts.do(http.MethodGet, path, "", nil)
	return code, string(b)
}

func (ts *testServer) upload(body []byte, query string) (int, client.UploadResult, string) {
	ts.t.Helper()
	code, b, _ := ts.do(http.MethodPost, "/api/v1/runs"+query, ts.token, bytes.NewReader(body))
	var res client.UploadResult
	if code/100 == 2 {
		if err := json.Unmarshal(b, &res); err != nil {
			ts.t.Fatalf("upload answer %s: %v", b, err)
		}
	}
	return code, res, string(b)
}

// state summarises the database for "unchanged" checks.
func (ts *testServer) state() string {
	ts.t.Helper()
	runs, records, err := ts.st.Counts(context.Background())
	if err != nil {
		ts.t.Fatal(err)
	}
	ms, err := ts.st.Models(context.Background(), "", "main", 0, false)
	if err != nil {
		ts.t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Repo+":"+m.Model+"/"+m.Test)
	}
	return fmt.Sprintf("%d runs, %d records, %s", runs, records, strings.Join(names, " "))
}

// errorOf decodes a JSON error body.
func errorOf(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
		t.Fatalf("body %q is not a JSON error: %v", body, err)
	}
	return e.Error
}
