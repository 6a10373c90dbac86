// Package testmodel holds reference language models for tests: models
// computed in pure Go whose log-probabilities are known, and writers that
// turn them into llama-architecture GGUF files llama.cpp can load, so the
// engine's numbers can be checked against an independent computation.
package testmodel

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/udgamlabs/udgam-ci/runner"
)

// Byte-level vocabulary shared by every model here: token id = byte value,
// then BOS.
const (
	BOS       int32 = 256
	ByteVocab       = 257
)

// bigramContext is the context length the bigram model claims; Score rejects
// longer sequences as the engine would.
const bigramContext = 4096

// Bigram is a byte-level bigram model: the next token depends only on the
// previous one, through a 257x257 logit table L, so
// log p(j | i) = L[i][j] - logsumexp_k L[i][k].
type Bigram struct {
	logits  []float64 // ByteVocab*ByteVocab, row i = previous token i
	logProb []float64 // the same rows, log-softmaxed
}

var _ runner.Model = (*Bigram)(nil)

// NewBigram makes a bigram model from a 257x257 table of finite logits;
// row i holds the logits of the token that follows token i.
func NewBigram(table [][]float64) (*Bigram, error) {
	if len(table) != ByteVocab {
		return nil, fmt.Errorf("bigram table has %d rows, want %d", len(table), ByteVocab)
	}
	b := &Bigram{
		logits:  make([]float64, ByteVocab*ByteVocab),
		logProb: make([]float64, ByteVocab*ByteVocab),
	}
	for i, row := range table {
		if len(row) != ByteVocab {
			return nil, fmt.Errorf("bigram table row %d has %d columns, want %d", i, len(row), ByteVocab)
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("bigram table [%d][%d] is %v, want a finite logit", i, j, v)
			}
		}
		copy(b.logits[i*ByteVocab:], row)
		lse := LogSumExp(row)
		for j, v := range row {
			b.logProb[i*ByteVocab+j] = v - lse
		}
	}
	return b, nil
}

// RandomBigram makes a bigram model with smooth random logits (normal, with
// a standard deviation of 2 nats), the same for the same seed.
func RandomBigram(seed int64) *Bigram {
	rng := newRand(seed)
	table := make([][]float64, ByteVocab)
	for i := range table {
		table[i] = make([]float64, ByteVocab)
		for j := range table[i] {
			table[i][j] = 2 * rng.NormFloat64()
		}
	}
	b, err := NewBigram(table)
	if err != nil {
		panic(err) // cannot happen: the table has the right shape and finite values
	}
	return b
}

// FitBigram estimates a bigram model from text with add-alpha smoothing:
// p(j | i) = (count(i, j) + alpha) / (count(i) + 257 alpha). The text is
// read as one document that starts after BOS. A model fitted on more text of
// a kind predicts that kind better, which gives demos a real difference.
func FitBigram(text []byte, alpha float64) (*Bigram, error) {
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return nil, fmt.Errorf("fit bigram: smoothing alpha must be a positive number, got %v", alpha)
	}
	counts := make([][]float64, ByteVocab)
	for i := range counts {
		counts[i] = make([]float64, ByteVocab)
	}
	prev := BOS
	for _, c := range text {
		counts[prev][c]++
		prev = int32(c)
	}
	for _, row := range counts {
		var total float64
		for _, n := range row {
			total += n
		}
		denom := math.Log(total + ByteVocab*alpha)
		for j, n := range row {
			row[j] = math.Log(n+alpha) - denom
		}
	}
	return NewBigram(counts)
}

// Table returns a copy of the logit table.
func (b *Bigram) Table() [][]float64 {
	t := make([][]float64, ByteVocab)
	for i := range t {
		t[i] = append([]float64(nil), b.logits[i*ByteVocab:(i+1)*ByteVocab]...)
	}
	return t
}

// LogProb returns log p(next | prev) in nats. Both ids must be in [0, 257).
func (b *Bigram) LogProb(prev, next int32) float64 {
	return b.logProb[int(prev)*ByteVocab+int(next)]
}

// Tokenize returns the bytes of text as token ids, without BOS.
func (b *Bigram) Tokenize(text string) ([]int32, error) {
	return byteTokens(text), nil
}

// Score implements runner.Scorer.
func (b *Bigram) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	return scoreRequests(ctx, reqs, ByteVocab, bigramContext, func(seq []int32, positions []int) []float64 {
		out := make([]float64, len(positions))
		for i, p := range positions {
			out[i] = b.LogProb(seq[p-1], seq[p])
		}
		return out
	})
}

// Info describes the model as runner.ReadInfo would describe the GGUF file
// WriteBigramGGUF makes of it, less the file's path and hash.
func (b *Bigram) Info() runner.Info {
	return bigramLayout(b).info()
}

func byteTokens(text string) []int32 {
	ids := make([]int32, len(text))
	for i := 0; i < len(text); i++ {
		ids[i] = int32(text[i])
	}
	return ids
}

// newRand is the generator every random model uses, so a seed means the same
// weights everywhere.
func newRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x7564_6761_6d2d_6369))
}
