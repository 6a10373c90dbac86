package testmodel

import (
	"fmt"
	"math"
)

// The bigram GGUF is a llama whose one block adds nothing (all its weight
// matrices are zero), whose embeddings are one-hot, and whose output matrix
// turns the normalised one-hot vector of the previous token back into that
// token's row of log-probabilities.
func bigramShape() Shape {
	return Shape{
		Layers:  1,
		Embd:    264, // one dimension per token, rounded up so 4 heads get an even size
		Heads:   4,
		KVHeads: 4,
		FFN:     64,
		Vocab:   ByteVocab,
		Context: bigramContext,
	}
}

const (
	bigramEps      float32 = 1e-5
	bigramRopeBase float32 = 10000
)

// WriteBigramGGUF writes b as a llama-architecture GGUF whose next-token
// log-probabilities under llama.cpp are b's (up to float32 rounding).
func WriteBigramGGUF(path string, b *Bigram, opts ...WriteOption) error {
	cfg := newWriteConfig(opts)
	if cfg.f16 {
		return fmt.Errorf("write %s: the bigram's output table needs F32; F16 would change its log-probabilities", path)
	}
	l := bigramLayout(b)
	if cfg.name != "" {
		l.kv["general.name"] = cfg.name
	}
	return l.write(path)
}

func bigramLayout(b *Bigram) *ggufLayout {
	return bigramLayoutOf(b, bigramShape(), func(tok int) int { return tok }, nil)
}

// bigramLayoutOf lays b out in shape s with token t's one-hot dimension at
// dim(t); plant, when not nil, may then change output row j (the logits of
// next token j over every dimension).
func bigramLayoutOf(b *Bigram, s Shape, dim func(tok int) int, plant func(j int, dst []float32)) *ggufLayout {
	kv := llamaShapeKV(s, bigramEps, bigramRopeBase)
	kv["general.name"] = "bigram"
	tokenizerKV(kv, s.Vocab)

	// The final RMSNorm turns the one-hot e_i into f*e_i with
	// f = 1/sqrt(1/n + eps), computed here as llama.cpp does from the
	// float32 epsilon; the output row for token j at column i is then
	// log p(j|i) / f, so the logits are exactly the log-probabilities.
	f := 1 / math.Sqrt(1/float64(s.Embd)+float64(bigramEps))

	zero := func(_ int, dst []float32) { clear(dst) }
	fill := func(v float32) func(int, []float32) {
		return func(_ int, dst []float32) {
			for i := range dst {
				dst[i] = v
			}
		}
	}
	oneHot := func(r int, dst []float32) {
		clear(dst)
		dst[dim(r)] = 1
	}
	output := func(j int, dst []float32) {
		clear(dst)
		if j >= ByteVocab {
			return
		}
		for i := range ByteVocab {
			dst[dim(i)] = float32(b.logProb[i*ByteVocab+j] / f)
		}
		if plant != nil {
			plant(j, dst)
		}
	}

	n, v := uint64(s.Embd), uint64(s.Vocab)
	tensors := []tensorSpec{
		{"token_embd.weight", []uint64{n, v}, oneHot},
		{"output_norm.weight", []uint64{n}, fill(1)},
		{"output.weight", []uint64{n, v}, output},
	}
	for i := range s.Layers {
		tensors = append(tensors, blockSpecs(i, s, func(name string) func(int, []float32) {
			if name == "attn_norm" || name == "ffn_norm" {
				return fill(1)
			}
			return zero
		})...)
	}
	return &ggufLayout{kv: kv, tensors: tensors}
}
