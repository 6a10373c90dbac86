package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/store"
)

func TestLoadgenUploadsAndReports(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "load.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	token, _, err := st.CreateToken(ctx, "udgamlabs/smol-train")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	var out bytes.Buffer
	err = run(ctx, options{Server: hs.URL, Token: token, Clients: 2, Duration: 400 * time.Millisecond, Records: 50, Test: "probes"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^(\d+) uploads of 50-record probes runs by 2 clients`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("output %q", out.String())
	}
	n, _ := strconv.Atoi(m[1])
	runs, _, err := st.Counts(ctx)
	if err != nil || n < 1 || runs < n {
		t.Fatalf("%d runs stored (%v); loadgen said %s", runs, err, out.String())
	}
	// A wrong token is an error, not a silent zero.
	if err := run(ctx, options{Server: hs.URL, Token: "udgci_bad", Clients: 1, Duration: time.Second, Records: 5, Test: "probes"}, &out); err == nil {
		t.Fatal("uploads with a bad token reported success")
	}
}
