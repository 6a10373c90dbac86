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

// LogProbRow returns log p(v | prev) for every token v of the vocabulary.
func (b *Bigram) LogProbRow(prev int32) []float64 {
	return append([]float64(nil), b.logProb[int(prev)*ByteVocab:(int(prev)+1)*ByteVocab]...)
}

// BigramPair is the float64 reference of runner.PairScorer for two bigram
// models: each position's KL divergence and top agreement are computed
// from the two full rows of log-probabilities.
type BigramPair struct{ Ref, Art *Bigram }

var _ runner.PairScorer = BigramPair{}

// ScorePair implements runner.PairScorer.
func (p BigramPair) ScorePair(ctx context.Context, reqs []runner.Request) ([]runner.PairResult, error) {
	out := make([]runner.PairResult, len(reqs))
	parts := [4]func(prev, next int32) float64{
		func(prev, next int32) float64 { return p.Ref.LogProb(prev, next) },
		func(prev, next int32) float64 { return p.Art.LogProb(prev, next) },
		func(prev, _ int32) float64 { return KLDivergence(p.Ref.LogProbRow(prev), p.Art.LogProbRow(prev)) },
		func(prev, _ int32) float64 {
			if argmax(p.Ref.LogProbRow(prev)) == argmax(p.Art.LogProbRow(prev)) {
				return 1
			}
			return 0
		},
	}
	var res [4][]runner.Result
	for k, f := range parts {
		r, err := scoreRequests(ctx, reqs, ByteVocab, bigramContext, func(seq []int32, positions []int) []float64 {
			out := make([]float64, len(positions))
			for i, pos := range positions {
				out[i] = f(seq[pos-1], seq[pos])
			}
			return out
		})
		if err != nil {
			return nil, err
		}
		res[k] = r
	}
	for i := range out {
		out[i] = runner.PairResult{Ref: res[0][i], Art: res[1][i], KL: res[2][i], SameTop: res[3][i]}
	}
	return out, nil
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
