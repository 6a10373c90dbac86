package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// FuzzUpload posts arbitrary bodies as run files. Whatever the body, the
// answer is never a 5xx; a refused upload changes nothing; an accepted one
// is served back whole and readable, and its model's pages answer. The
// seeds are valid runs and the hostile records of issue 13; crashers found
// are kept under testdata/fuzz/FuzzUpload and replayed by every go test.
func FuzzUpload(f *testing.F) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(f.TempDir(), "runs.db"), store.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	token, _, err := st.CreateToken(ctx, testRepo)
	if err != nil {
		f.Fatal(err)
	}
	srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.DiscardHandler), MaxBody: 1 << 20, CompareResamples: 100})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	serve := func(method, path string, body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}

	probes := servertest.Spec{ID: "seed-p", Seed: 1, Records: 3}.Body()
	fresh := servertest.Spec{ID: "seed-f", Test: runfile.TestFresh, Seed: 2, Records: 3}.Body()
	f.Add(probes)
	f.Add(fresh)
	hdr := func(b []byte) string { return string(b[:bytes.IndexByte(b, '\n')+1]) }
	for _, rec := range []string{
		`{"id":"big","source":"x","bytes":1,"tokens":1,"bits":1e308,"windows":1}`,
		`{"id":"z","source":"x","bytes":0,"tokens":1,"bits":5,"windows":1}`,
		`{"id":"o","source":"x","bytes":4611686018427387904,"tokens":1,"bits":1,"windows":1}`,
	} {
		f.Add([]byte(hdr(fresh) + rec + "\n"))
	}
	f.Add([]byte(strings.Replace(hdr(fresh), "2026-11-01", "1000-01-01", 1) + `{"id":"a","source":"x","bytes":1,"tokens":1,"bits":1,"windows":1}` + "\n"))
	f.Add([]byte(hdr(probes) + `{"id":"p","type":"add","level":1,"logprobs":[-1,-9],"pred":1,"answer":1,"correct":true}` + "\n"))
	f.Add([]byte(strings.Replace(hdr(probes), `"name":"HuggingFaceTB`, `"file":"<<<<","name":"HuggingFaceTB`, 1) + `{"id":"q","type":"add","level":1,"logprobs":[-1,-9],"pred":0,"answer":0,"correct":true}` + "\n"))

	f.Fuzz(func(t *testing.T, body []byte) {
		runs, records, err := st.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w := serve(http.MethodPost, "/api/v1/runs", body)
		if w.Code >= 500 {
			t.Fatalf("upload answered %d: %s", w.Code, w.Body)
		}
		if w.Code/100 != 2 {
			if r2, rec2, _ := st.Counts(ctx); r2 != runs || rec2 != records {
				t.Fatalf("refused upload (%d) changed the database: %d/%d runs/records -> %d/%d", w.Code, runs, records, r2, rec2)
			}
			return
		}
		var res client.UploadResult
		if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
			t.Fatalf("upload answer %s: %v", w.Body, err)
		}
		back := serve(http.MethodGet, "/api/v1/runs/"+res.ID+"/records", nil)
		if back.Code != 200 {
			t.Fatalf("records of %s: %d %s", res.ID, back.Code, back.Body)
		}
		if _, err := runfile.Read(back.Body, "served"); err != nil {
			t.Fatalf("served run %s does not read back: %v", res.ID, err)
		}
		for _, path := range []string{"/", "/api/v1/models", "/runs/" + res.ID, "/api/v1/runs/" + res.ID,
			"/api/v1/compare?base=" + res.ID + "&head=" + res.ID} {
			if w := serve(http.MethodGet, path, nil); w.Code >= 500 {
				t.Fatalf("%s after upload: %d %s", path, w.Code, w.Body)
			}
		}
	})
}
