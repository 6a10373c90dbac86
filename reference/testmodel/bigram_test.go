package testmodel

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runner"
)

// rowLogProb is log p(next | prev) computed directly from a logit table.
func rowLogProb(table [][]float64, prev, next int32) float64 {
	row := table[prev]
	var sum float64
	for _, v := range row {
		sum += math.Exp(v)
	}
	return row[next] - math.Log(sum)
}

func TestBigramScoreMatchesArithmetic(t *testing.T) {
	t.Parallel()
	b := RandomBigram(7)
	table := b.Table()
	reqs := []runner.Request{
		{Branches: []runner.Branch{{Tokens: []int32{BOS, 'h', 'i', '!'}, Positions: []int{1, 2, 3}}}},
		{
			Prefix: []int32{BOS, 'Q', ':'},
			Branches: []runner.Branch{
				{Tokens: []int32{' ', 'y'}, Positions: []int{4, 3}},
				{Tokens: []int32{0, 255}, Positions: []int{1, 3, 4}},
				{Tokens: []int32{'n'}},
			},
		},
	}
	got, err := b.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	for r, req := range reqs {
		for br, branch := range req.Branches {
			seq := append(append([]int32{}, req.Prefix...), branch.Tokens...)
			if len(got[r][br]) != len(branch.Positions) {
				t.Fatalf("request %d branch %d: %d results for %d positions", r, br, len(got[r][br]), len(branch.Positions))
			}
			for i, p := range branch.Positions {
				want := rowLogProb(table, seq[p-1], seq[p])
				if d := math.Abs(got[r][br][i] - want); d > 1e-12 {
					t.Errorf("request %d branch %d position %d: got %v, want %v", r, br, p, got[r][br][i], want)
				}
			}
		}
	}
}

func TestBigramRowsAreDistributions(t *testing.T) {
	t.Parallel()
	b := RandomBigram(1)
	for prev := range int32(ByteVocab) {
		var sum float64
		for next := range int32(ByteVocab) {
			sum += math.Exp(b.LogProb(prev, next))
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Fatalf("row %d sums to %v", prev, sum)
		}
	}
}

func TestBigramScoreRejectsBadInput(t *testing.T) {
	t.Parallel()
	ok := runner.Request{Branches: []runner.Branch{{Tokens: []int32{BOS, 'a'}, Positions: []int{1}}}}
	tests := []struct {
		name string
		req  runner.Request
		want string
	}{
		{"position zero", runner.Request{Branches: []runner.Branch{{Tokens: []int32{BOS, 'a'}, Positions: []int{0}}}}, "position 0"},
		{"position negative", runner.Request{Branches: []runner.Branch{{Tokens: []int32{BOS, 'a'}, Positions: []int{-1}}}}, "position -1"},
		{"position past end", runner.Request{Prefix: []int32{BOS}, Branches: []runner.Branch{{Tokens: []int32{'a'}, Positions: []int{2}}}}, "position 2"},
		{"empty sequence", runner.Request{Branches: []runner.Branch{{Positions: []int{1}}}}, "position 1"},
		{"token too large", runner.Request{Branches: []runner.Branch{{Tokens: []int32{BOS, 257}, Positions: []int{1}}}}, "token id 257"},
		{"token negative", runner.Request{Prefix: []int32{-3}, Branches: []runner.Branch{{Tokens: []int32{'a'}, Positions: []int{1}}}}, "token id -3"},
		{"no branches", runner.Request{Prefix: []int32{BOS}}, "no branches"},
		{"too long", runner.Request{Branches: []runner.Branch{{Tokens: make([]int32, bigramContext+1), Positions: []int{1}}}}, "context length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RandomBigram(1).Score(context.Background(), []runner.Request{ok, tt.req})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), "request 1") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q should name request 1 and %q", err, tt.want)
			}
		})
	}
}

func TestBigramScoreStopsOnCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := runner.Request{Branches: []runner.Branch{{Tokens: []int32{BOS, 'a'}, Positions: []int{1}}}}
	if _, err := RandomBigram(1).Score(ctx, []runner.Request{req}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestFitBigramCounts(t *testing.T) {
	t.Parallel()
	const alpha = 0.5
	b, err := FitBigram([]byte("abab"), alpha)
	if err != nil {
		t.Fatal(err)
	}
	// Transitions: BOS->a, a->b twice, b->a once.
	tests := []struct {
		prev, next  int32
		count, rows float64
	}{
		{BOS, 'a', 1, 1},
		{BOS, 'b', 0, 1},
		{'a', 'b', 2, 2},
		{'a', 'a', 0, 2},
		{'b', 'a', 1, 1},
		{'z', 'a', 0, 0},
		{'a', BOS, 0, 2},
	}
	for _, tt := range tests {
		want := math.Log((tt.count + alpha) / (tt.rows + ByteVocab*alpha))
		if got := b.LogProb(tt.prev, tt.next); math.Abs(got-want) > 1e-12 {
			t.Errorf("log p(%d|%d) = %v, want %v", tt.next, tt.prev, got, want)
		}
	}
}

func TestFitBigramMoreTextPredictsBetter(t *testing.T) {
	t.Parallel()
	train := strings.Repeat("the cat sat on the mat. ", 40)
	test := "the cat sat on the mat."
	small, err := FitBigram([]byte(train[:30]), 0.1)
	if err != nil {
		t.Fatal(err)
	}
	large, err := FitBigram([]byte(train), 0.1)
	if err != nil {
		t.Fatal(err)
	}
	nll := func(b *Bigram) float64 {
		seq := append([]int32{BOS}, byteTokens(test)...)
		var s float64
		for p := 1; p < len(seq); p++ {
			s -= b.LogProb(seq[p-1], seq[p])
		}
		return s
	}
	if nll(large) >= nll(small) {
		t.Errorf("model fitted on more text scores %v nats, fewer-text model %v", nll(large), nll(small))
	}
}

func TestBigramConstructorsRejectBadInput(t *testing.T) {
	t.Parallel()
	square := func(n, m int) [][]float64 {
		t := make([][]float64, n)
		for i := range t {
			t[i] = make([]float64, m)
		}
		return t
	}
	nan := square(ByteVocab, ByteVocab)
	nan[3][4] = math.NaN()
	inf := square(ByteVocab, ByteVocab)
	inf[0][0] = math.Inf(-1)
	tests := []struct {
		name  string
		table [][]float64
		want  string
	}{
		{"rows", square(256, ByteVocab), "256 rows"},
		{"columns", square(ByteVocab, 10), "row 0 has 10 columns"},
		{"nan", nan, "[3][4]"},
		{"inf", inf, "[0][0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewBigram(tt.table)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error naming %q", err, tt.want)
			}
		})
	}
	for _, alpha := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := FitBigram([]byte("x"), alpha); err == nil {
			t.Errorf("alpha %v accepted", alpha)
		}
	}
}

func TestBigramTokenizeAndInfo(t *testing.T) {
	t.Parallel()
	b := RandomBigram(3)
	ids, err := b.Tokenize("a\xff\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{'a', 255, '\n'}; !slices.Equal(ids, want) {
		t.Errorf("Tokenize = %v, want %v", ids, want)
	}
	info := b.Info()
	if info.Arch != "llama" || info.BOS != BOS || info.EOS != BOS || !info.AddBOS || info.VocabSize != ByteVocab ||
		info.TokenizerModel != "gpt2" || len(info.TokenizerSHA256) != 64 || info.Dtype != "F32" || info.ContextLength != bigramContext {
		t.Errorf("Info = %+v", info)
	}
}
