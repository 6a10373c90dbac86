package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// Pinning again replaces the anchor and its budget; the changes stored
// since the old anchor are not shown as changes since the new one.
func TestPinAnchorReplaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	for i, id := range []string{"r1", "r2", "r3"} {
		put(t, s, servertest.Spec{ID: id, Seed: uint64(i)}, store.PutOptions{})
	}
	tok := store.Token{ID: 7, Repo: "udgamlabs/smol-train"}
	budget := 2.5
	if _, err := s.PinAnchor(ctx, "r1", tok, &budget); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAnchorDelta(ctx, "r3", "r1", 1.5, 0.5, 2.5); err != nil {
		t.Fatal(err)
	}
	a, deltas, err := s.AnchorDeltas(ctx, tok.Repo, "HuggingFaceTB/SmolLM2-135M", runfile.TestProbes)
	if err != nil || a.RunID != "r1" || *a.MaxDrift != 2.5 || a.TokenID != 7 || deltas["r3"].Delta != 1.5 {
		t.Fatalf("anchor %+v, deltas %v: %v", a, deltas, err)
	}
	if _, err := s.PinAnchor(ctx, "r2", tok, nil); err != nil {
		t.Fatal(err)
	}
	a, deltas, err = s.AnchorDeltas(ctx, tok.Repo, "HuggingFaceTB/SmolLM2-135M", runfile.TestProbes)
	if err != nil || a.RunID != "r2" || a.MaxDrift != nil || len(deltas) != 0 {
		t.Fatalf("after re-pinning: anchor %+v, deltas %v: %v", a, deltas, err)
	}
	if _, err := s.AnchorOf(ctx, tok.Repo, "HuggingFaceTB/SmolLM2-135M", runfile.TestFresh); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("fresh anchor: %v, want not found", err)
	}
}
