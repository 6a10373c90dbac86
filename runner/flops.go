package runner

import (
	"fmt"

	"github.com/ollama/ollama/fs/ggml"
)

// Shape is what the useful arithmetic of a Llama decoder (grouped-query
// attention, SwiGLU feed-forward) depends on: the anchor BENCHMARKS.md
// divides by the FMA peak.
type Shape struct {
	Layers  int
	Embd    int // n_embd
	Heads   int
	KVHeads int
	HeadDim int // of queries, keys and values alike
	FFN     int // the gate, up and down matrices' inner size
	Vocab   int // rows of the output head
}

func (s Shape) qDim() int  { return s.Heads * s.HeadDim }
func (s Shape) kvDim() int { return s.KVHeads * s.HeadDim }

// KVBytes is the size of a float32 KV cache of cells cells, as udgam-ci
// opens it: a key and a value of kvDim floats per cell in every layer.
func (s Shape) KVBytes(cells int) int64 {
	return int64(cells) * int64(s.Layers) * 2 * int64(s.kvDim()) * 4
}

// FLOPs counts the useful floating-point operations of scoring reqs in one
// engine call on a model of shape s, as the planner feeds them under lim:
// every weight matrix for every token fed (a shared prefix once, and with
// lim.ShareStarts each shared start once), the output head once for every
// token whose output is read, and causal attention (the scores and the
// weighted sum over the keys up to each token). Work an engine spends on
// masked keys, padding or a prefix copied per branch is not useful, so not
// counted.
func FLOPs(s Shape, reqs []Request, lim Limits) float64 {
	perToken := float64(s.Layers) * 2 * float64(s.Embd*(s.qDim()+2*s.kvDim())+s.qDim()*s.Embd+3*s.Embd*s.FFN)
	head := 2 * float64(s.Embd*s.Vocab)
	// The token at position i attends to i+1 keys: 2 FLOPs per query
	// dimension for the score and 2 for the weighted value, in every layer.
	key := 4 * float64(s.qDim()*s.Layers)
	total := 0.0
	eachEntry(reqs, lim, func(e Entry) {
		total += perToken + float64(e.Pos+1)*key
		if len(e.Reads) > 0 {
			total += head
		}
	})
	return total
}

// ShapeFromGGUF reads a Llama's shape from its metadata and tensors, as
// llama.cpp reads them. Other architectures compute other things (biases,
// other feed-forwards, sliding windows), so they are refused rather than
// counted wrong.
func ShapeFromGGUF(kv ggml.KV, tensors []*ggml.Tensor) (Shape, error) {
	if arch := kv.Architecture(); arch != "llama" {
		return Shape{}, fmt.Errorf("architecture %q: FLOPs are counted for llama only", arch)
	}
	if kv.HeadCountMin() != kv.HeadCountMax() || kv.HeadCountKVMin() != kv.HeadCountKVMax() {
		return Shape{}, fmt.Errorf("head counts vary by layer, which the count does not model")
	}
	s := Shape{
		Layers:  int(kv.BlockCount()),
		Embd:    int(kv.EmbeddingLength()),
		Heads:   int(kv.HeadCountMax()),
		KVHeads: int(kv.HeadCountKVMax()),
		FFN:     int(kv.Uint("feed_forward_length")),
	}
	if _, ok := kv["llama.attention.head_count_kv"]; !ok {
		s.KVHeads = s.Heads // llama.cpp's default (the decoder's is 1): no grouping
	}
	if s.Heads > 0 {
		s.HeadDim = s.Embd / s.Heads
	}
	s.HeadDim = int(kv.Uint("attention.key_length", uint32(s.HeadDim)))
	if v := int(kv.Uint("attention.value_length", uint32(s.HeadDim))); v != s.HeadDim {
		return Shape{}, fmt.Errorf("key length %d and value length %d differ, which the count does not model", s.HeadDim, v)
	}
	// The output head is output.weight, or the token embeddings when it is
	// tied to them (SmolLM2).
	for _, name := range []string{"output.weight", "token_embd.weight"} {
		for _, t := range tensors {
			if t.Name == name && len(t.Shape) == 2 && s.Vocab == 0 {
				s.Vocab = int(t.Shape[1])
			}
		}
	}
	if s.Layers < 1 || s.Embd < 1 || s.Heads < 1 || s.HeadDim < 1 || s.FFN < 1 || s.Vocab < 1 {
		return Shape{}, fmt.Errorf("shape %+v: a size is missing from the metadata", s)
	}
	return s, nil
}

// ReadShape reads the shape of the GGUF model at path.
func ReadShape(path string) (Shape, error) {
	g, err := decodeSizes(path)
	if err != nil {
		return Shape{}, err
	}
	s, err := ShapeFromGGUF(g.KV(), g.Tensors().Items())
	if err != nil {
		return Shape{}, fmt.Errorf("model %s: %w", path, err)
	}
	return s, nil
}
