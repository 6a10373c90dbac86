package probestest

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

func scoreAll(t *testing.T, m runner.Model, items []probes.Item) []runfile.Item {
	t.Helper()
	var recs []runfile.Item
	opt := probes.ScoreOptions{AddBOS: true, BOS: testmodel.BOS}
	if err := probes.Score(context.Background(), m, items, opt, func(r runfile.Item) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}

// Sharing the prompt must change nothing: the same items scored with each
// choice as its own full sequence give the same numbers, on a transformer
// where attention over the prompt matters.
func TestSharedPrefixEqualsNaive(t *testing.T) {
	t.Parallel()
	m, err := testmodel.RandomLlama(5, testmodel.DefaultShape())
	if err != nil {
		t.Fatal(err)
	}
	items, err := probes.Generate(probes.Options{Types: probes.TypesAll, Per: 1, Seed: 2026})
	if err != nil {
		t.Fatal(err)
	}
	shared := scoreAll(t, m, items)
	naive := scoreAll(t, NaiveModel{Model: m}, items)
	for i := range shared {
		for c := range shared[i].Logprobs {
			if d := math.Abs(shared[i].Logprobs[c] - naive[i].Logprobs[c]); d > 1e-9 {
				t.Errorf("%s choice %d: shared %v, naive %v", shared[i].ID, c, shared[i].Logprobs[c], naive[i].Logprobs[c])
			}
		}
		if shared[i].Pred != naive[i].Pred {
			t.Errorf("%s: shared picks %d, naive %d", shared[i].ID, shared[i].Pred, naive[i].Pred)
		}
	}
}

func TestNaiveRequests(t *testing.T) {
	t.Parallel()
	req := runner.Request{Prefix: []int32{1, 2, 3}, Branches: []runner.Branch{
		{Tokens: []int32{4}, Positions: []int{3}},
		{Tokens: []int32{5, 6}, Positions: []int{3, 4}},
	}}
	got := Naive(req)
	want := []runner.Request{
		{Branches: []runner.Branch{{Tokens: []int32{1, 2, 3, 4}, Positions: []int{3}}}},
		{Branches: []runner.Branch{{Tokens: []int32{1, 2, 3, 5, 6}, Positions: []int{3, 4}}}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d requests, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Prefix != nil || !slices.Equal(got[i].Branches[0].Tokens, want[i].Branches[0].Tokens) || !slices.Equal(got[i].Branches[0].Positions, want[i].Branches[0].Positions) {
			t.Errorf("request %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
