package servertest

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// Live is a real report server on 127.0.0.1 over a real SQLite file in a
// test's temporary folder.
type Live struct {
	URL    string
	Store  *store.Store
	Tokens []string // one upload token per repository given to Start, in order
}

// Start serves cfg with a new store until the test ends. cfg.Store is
// filled in.
func Start(t testing.TB, cfg server.Config, repos ...string) *Live {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	live := &Live{Store: st}
	for _, r := range repos {
		tok, _, err := st.CreateToken(ctx, r)
		if err != nil {
			t.Fatalf("token for %s: %v", r, err)
		}
		live.Tokens = append(live.Tokens, tok)
	}
	cfg.Store = st
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	live.URL = hs.URL
	return live
}
