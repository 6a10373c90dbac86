package testmodel

import (
	"context"
	"fmt"
	"math"

	"github.com/udgamlabs/udgam-ci/runner"
)

// outlierShape is the bigram's shape widened to 288 = 9 blocks of 32, a
// width every llama.cpp block quantizer accepts (the K-quants fall back).
func outlierShape() Shape {
	s := bigramShape()
	s.Embd = 288
	return s
}

// outlierIdle is the one-hot dimension no token sets: token '?' (63) is
// moved to dimension 257, so dimension 63 stays zero in every hidden state
// while sharing quantization block 32..63 with ' ' and the digits.
const outlierIdle = 63

func outlierDim(tok int) int {
	if tok == outlierIdle {
		return ByteVocab
	}
	return tok
}

// WriteOutlierBigramGGUF writes b as a llama GGUF whose log-probabilities
// under llama.cpp are b's, like WriteBigramGGUF, with a trap for block
// quantizers: the output rows of the tokens in damaged carry weight outlier
// in the idle dimension 63. No hidden state ever sets that dimension, so
// the file in full precision scores exactly as b; but a quantizer that
// scales each block of 32 weights to its largest rounds every other weight
// of block 32..63 in those rows (what b says of the damaged tokens after
// ' ', the digits and the punctuation between) to zero. The damage is
// planted, and made by llama.cpp's own quantizer, not written here.
func WriteOutlierBigramGGUF(path string, b *Bigram, damaged []int32, outlier float32) error {
	rows := map[int]bool{}
	for _, t := range damaged {
		if t < 0 || int(t) >= ByteVocab {
			return fmt.Errorf("write %s: damaged token %d outside the %d-token vocabulary", path, t, ByteVocab)
		}
		rows[int(t)] = true
	}
	l := bigramLayoutOf(b, outlierShape(), outlierDim, func(j int, dst []float32) {
		if rows[j] {
			dst[outlierIdle] = outlier
		}
	})
	l.kv["general.name"] = "bigram-outlier"
	return l.write(path)
}

// Rows gives log p(v | prefix) for every token v of the vocabulary.
type Rows func(ctx context.Context, prefix []int32) ([]float64, error)

// RowPair is the float64 reference of runner.PairScorer for two models
// computed in Go: at each position both models' whole next-token
// distributions are read and compared.
type RowPair struct{ Ref, Art Rows }

var _ runner.PairScorer = RowPair{}

// ScorePair implements runner.PairScorer.
func (p RowPair) ScorePair(ctx context.Context, reqs []runner.Request) ([]runner.PairResult, error) {
	out := make([]runner.PairResult, len(reqs))
	for i, r := range reqs {
		n := len(r.Branches)
		pr := runner.PairResult{Ref: make(runner.Result, n), Art: make(runner.Result, n), KL: make(runner.Result, n), SameTop: make(runner.Result, n)}
		for b, br := range r.Branches {
			seq := append(append([]int32(nil), r.Prefix...), br.Tokens...)
			for _, pos := range br.Positions {
				lp, err := p.Ref(ctx, seq[:pos])
				if err != nil {
					return nil, err
				}
				lq, err := p.Art(ctx, seq[:pos])
				if err != nil {
					return nil, err
				}
				same := 0.0
				if argmax(lp) == argmax(lq) {
					same = 1
				}
				pr.Ref[b] = append(pr.Ref[b], lp[seq[pos]])
				pr.Art[b] = append(pr.Art[b], lq[seq[pos]])
				pr.KL[b] = append(pr.KL[b], KLDivergence(lp, lq))
				pr.SameTop[b] = append(pr.SameTop[b], same)
			}
		}
		out[i] = pr
	}
	return out, nil
}

// ScorerRows reads a scorer's rows with one request whose branches are the
// vocabulary: a forward pass per token, for tiny models and few positions.
func ScorerRows(s runner.Scorer, vocab int) Rows {
	return func(ctx context.Context, prefix []int32) ([]float64, error) {
		req := runner.Request{Prefix: prefix}
		for v := range vocab {
			req.Branches = append(req.Branches, runner.Branch{Tokens: []int32{int32(v)}, Positions: []int{len(prefix)}})
		}
		res, err := s.Score(ctx, []runner.Request{req})
		if err != nil {
			return nil, err
		}
		row := make([]float64, vocab)
		for v := range row {
			row[v] = res[0][v][0]
		}
		return row, nil
	}
}

// Rows is the bigram's closed form: the row of the prefix's last token.
func (b *Bigram) Rows(_ context.Context, prefix []int32) ([]float64, error) {
	if len(prefix) == 0 {
		return nil, fmt.Errorf("bigram rows: an empty prefix predicts nothing")
	}
	prev := int(prefix[len(prefix)-1])
	return append([]float64(nil), b.logProb[prev*ByteVocab:(prev+1)*ByteVocab]...), nil
}

// KLDivergence is KL(p || q) of two rows of log-probabilities, in float64.
func KLDivergence(lp, lq []float64) float64 {
	k := 0.0
	for i := range lp {
		k += math.Exp(lp[i]) * (lp[i] - lq[i])
	}
	return k
}

// argmax is the index of the largest value, the lowest on a tie.
func argmax(row []float64) int {
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return best
}
