package testmodel

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/x448/float16"
)

// Shape is a llama transformer's size.
type Shape struct {
	Layers  int
	Embd    int // n_embd, divisible by Heads into an even head size
	Heads   int
	KVHeads int // divides Heads (grouped-query attention)
	FFN     int
	Vocab   int // at least 257: the bytes, BOS, then padding tokens
	Context int
	// TiedOutput leaves out output.weight, so llama.cpp uses the token
	// embeddings as the output matrix (as SmolLM2 does).
	TiedOutput bool
}

// DefaultShape is small enough for the pure-Go forward pass to be quick and
// large enough that attention over several heads matters.
func DefaultShape() Shape {
	return Shape{Layers: 2, Embd: 64, Heads: 4, KVHeads: 2, FFN: 128, Vocab: ByteVocab, Context: 512}
}

// SmolShape is SmolLM2-135M's shape, for benchmarks.
func SmolShape() Shape {
	return Shape{Layers: 30, Embd: 576, Heads: 9, KVHeads: 3, FFN: 1536, Vocab: 49152, Context: 2048, TiedOutput: true}
}

func (s Shape) headDim() int { return s.Embd / s.Heads }

// Dims is the shape as runner.FLOPs and runner.Shape.KVBytes take it.
func (s Shape) Dims() runner.Shape {
	return runner.Shape{Layers: s.Layers, Embd: s.Embd, Heads: s.Heads, KVHeads: s.KVHeads,
		HeadDim: s.headDim(), FFN: s.FFN, Vocab: s.Vocab}
}

func (s Shape) validate() error {
	switch {
	case s.Layers < 1 || s.Embd < 1 || s.Heads < 1 || s.KVHeads < 1 || s.FFN < 1 || s.Context < 1:
		return fmt.Errorf("shape %+v: every size must be positive", s)
	case s.Embd%s.Heads != 0 || s.headDim()%2 != 0:
		return fmt.Errorf("shape %+v: embedding length must split into heads of an even size", s)
	case s.Heads%s.KVHeads != 0:
		return fmt.Errorf("shape %+v: KV heads must divide heads", s)
	case s.Vocab < ByteVocab:
		return fmt.Errorf("shape %+v: vocabulary must hold the 256 bytes and BOS", s)
	}
	return nil
}

const (
	llamaEps      float32 = 1e-5
	llamaRopeBase float32 = 10000
)

// Llama is a random-weight llama transformer with the byte-level tokenizer.
// Its weights are a function of the seed and each tensor's name, generated
// row by row: writing a large one streams to disk, and the pure-Go forward
// pass (Score) loads them into memory, as float32, on first use.
type Llama struct {
	shape Shape
	seed  int64

	once    sync.Once
	weights *llamaWeights
}

var _ runner.Model = (*Llama)(nil)

// RandomLlama makes a random-weight llama of the given shape; the same seed
// gives the same weights. Every weight is an F16 value, so F16 and F32 files
// of the model hold the same numbers.
func RandomLlama(seed int64, s Shape) (*Llama, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	return &Llama{shape: s, seed: seed}, nil
}

// Shape returns the model's shape.
func (m *Llama) Shape() Shape { return m.shape }

// WriteLlamaGGUF writes m as a llama-architecture GGUF file.
func WriteLlamaGGUF(path string, m *Llama, opts ...WriteOption) error {
	cfg := newWriteConfig(opts)
	l := m.layout(cfg.f16)
	if cfg.name != "" {
		l.kv["general.name"] = cfg.name
	}
	return l.write(path)
}

// Info describes the model as runner.ReadInfo would describe its F32 GGUF
// file, less the file's path and hash.
func (m *Llama) Info() runner.Info { return m.layout(false).info() }

// Tokenize returns the bytes of text as token ids, without BOS.
func (m *Llama) Tokenize(text string) ([]int32, error) { return byteTokens(text), nil }

// Score implements runner.Scorer with a float64 forward pass. Each branch is
// computed whole; the prefix is not shared, which costs time, not accuracy.
func (m *Llama) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	m.once.Do(func() { m.weights = m.loadWeights() })
	return scoreRequests(ctx, reqs, m.shape.Vocab, m.shape.Context, m.logProbs)
}

func (m *Llama) layout(f16 bool) *ggufLayout {
	s := m.shape
	kv := llamaShapeKV(s, llamaEps, llamaRopeBase)
	kv["general.name"] = "random-llama"
	if f16 {
		kv["general.file_type"] = uint32(1) // mostly F16
	}
	tokenizerKV(kv, s.Vocab)

	n, v := uint64(s.Embd), uint64(s.Vocab)
	// Standard deviations keep activations near unit size, so attention
	// scores vary between positions and every part of the block counts.
	inStd := 1 / math.Sqrt(float64(s.Embd))
	tensors := []tensorSpec{
		{"token_embd.weight", []uint64{n, v}, m.random("token_embd.weight", 0, 0.5)},
		{"output_norm.weight", []uint64{n}, m.random("output_norm.weight", 1, 0.1)},
	}
	if !s.TiedOutput {
		tensors = append(tensors, tensorSpec{"output.weight", []uint64{n, v}, m.random("output.weight", 0, 2*inStd)})
	}
	for i := range s.Layers {
		tensors = append(tensors, blockSpecs(i, s, func(name string) func(int, []float32) {
			full := blockTensorName(i, name)
			switch name {
			case "attn_norm", "ffn_norm":
				return m.random(full, 1, 0.1)
			case "ffn_down":
				return m.random(full, 0, 1/math.Sqrt(float64(s.FFN)))
			default:
				return m.random(full, 0, inStd)
			}
		})...)
	}
	return &ggufLayout{kv: kv, tensors: tensors, f16: f16}
}

// random returns the row generator of one tensor: normal values rounded to
// F16, each row drawn from its own stream so rows can be made in any order.
func (m *Llama) random(name string, mean, std float64) func(int, []float32) {
	h := fnv.New64a()
	h.Write([]byte(name))
	key := uint64(m.seed) ^ h.Sum64()
	return func(r int, dst []float32) {
		rng := rand.New(rand.NewPCG(key, uint64(r)))
		for i := range dst {
			dst[i] = float16.Fromfloat32(float32(mean + std*rng.NormFloat64())).Float32()
		}
	}
}

func blockTensorName(layer int, name string) string {
	return fmt.Sprintf("blk.%d.%s.weight", layer, name)
}

// blockSpecs lists one transformer block's tensors as llama.cpp's llama
// architecture names and shapes them; rows picks each tensor's values.
// Matrices are stored [in, out]: row o holds output o's input weights.
func blockSpecs(layer int, s Shape, rows func(name string) func(int, []float32)) []tensorSpec {
	n, ff := uint64(s.Embd), uint64(s.FFN)
	kvDim := uint64(s.KVHeads * s.headDim())
	shapes := []struct {
		name  string
		shape []uint64
	}{
		{"attn_norm", []uint64{n}},
		{"attn_q", []uint64{n, n}},
		{"attn_k", []uint64{n, kvDim}},
		{"attn_v", []uint64{n, kvDim}},
		{"attn_output", []uint64{n, n}},
		{"ffn_norm", []uint64{n}},
		{"ffn_gate", []uint64{n, ff}},
		{"ffn_up", []uint64{n, ff}},
		{"ffn_down", []uint64{ff, n}},
	}
	specs := make([]tensorSpec, len(shapes))
	for i, sh := range shapes {
		specs[i] = tensorSpec{blockTensorName(layer, sh.name), sh.shape, rows(sh.name)}
	}
	return specs
}

// llamaWeights holds the model's tensors for the forward pass, row-major
// [out][in] as in the file.
type llamaWeights struct {
	embd, outNorm, out []float32
	layers             []layerWeights
}

type layerWeights struct {
	attnNorm, q, k, v, o, ffnNorm, gate, up, down []float32
}

func (m *Llama) loadWeights() *llamaWeights {
	byName := map[string][]float32{}
	for _, t := range m.layout(false).tensors {
		width := int(t.shape[0])
		data := make([]float32, int(t.elements()))
		for r := range t.rows() {
			t.row(r, data[r*width:(r+1)*width])
		}
		byName[t.name] = data
	}
	w := &llamaWeights{
		embd:    byName["token_embd.weight"],
		outNorm: byName["output_norm.weight"],
		out:     byName["output.weight"],
	}
	if m.shape.TiedOutput {
		w.out = w.embd
	}
	for i := range m.shape.Layers {
		get := func(name string) []float32 { return byName[blockTensorName(i, name)] }
		w.layers = append(w.layers, layerWeights{
			attnNorm: get("attn_norm"), q: get("attn_q"), k: get("attn_k"), v: get("attn_v"),
			o: get("attn_output"), ffnNorm: get("ffn_norm"),
			gate: get("ffn_gate"), up: get("ffn_up"), down: get("ffn_down"),
		})
	}
	return w
}

// logProbs runs the transformer over seq as llama.cpp's llama graph does, in
// float64, and returns log p(seq[p] | seq[:p]) for each position.
func (m *Llama) logProbs(seq []int32, positions []int) []float64 {
	s, w := m.shape, m.weights
	n := lastPosition(positions)
	hd := s.headDim()
	kvDim := s.KVHeads * hd
	eps := float64(llamaEps)

	x := make([][]float64, n)
	for t := range n {
		x[t] = make([]float64, s.Embd)
		row := w.embd[int(seq[t])*s.Embd:]
		for i := range x[t] {
			x[t][i] = float64(row[i])
		}
	}

	h := make([]float64, s.Embd)
	q := make([][]float64, n)
	k := make([][]float64, n)
	v := make([][]float64, n)
	for t := range n {
		q[t] = make([]float64, s.Embd)
		k[t] = make([]float64, kvDim)
		v[t] = make([]float64, kvDim)
	}
	attn := make([]float64, s.Embd)
	delta := make([]float64, s.Embd)
	scores := make([]float64, n)
	gate := make([]float64, s.FFN)
	up := make([]float64, s.FFN)
	for _, lw := range w.layers {
		for t := range n {
			rmsNorm(h, x[t], lw.attnNorm, eps)
			matVec(q[t], lw.q, h)
			matVec(k[t], lw.k, h)
			matVec(v[t], lw.v, h)
			rope(q[t], hd, t, float64(llamaRopeBase))
			rope(k[t], hd, t, float64(llamaRopeBase))
		}
		// Attention reads the keys of every earlier token, so it runs once
		// all of this layer's keys exist; x changes only after that.
		outs := make([][]float64, n)
		for t := range n {
			causalAttention(attn, q[t], k[:t+1], v[:t+1], s.Heads, s.KVHeads, scores)
			outs[t] = make([]float64, s.Embd)
			matVec(outs[t], lw.o, attn)
		}
		for t := range n {
			addTo(x[t], outs[t])
			rmsNorm(h, x[t], lw.ffnNorm, eps)
			matVec(gate, lw.gate, h)
			matVec(up, lw.up, h)
			for i, g := range gate {
				gate[i] = g / (1 + math.Exp(-g)) * up[i] // SwiGLU: silu(gate) * up
			}
			matVec(delta, lw.down, gate)
			addTo(x[t], delta)
		}
	}

	norm := func(dst, x []float64) { rmsNorm(dst, x, w.outNorm, eps) }
	return headLogProbs(x, seq, positions, s.Vocab, norm, w.out, nil)
}

// rmsNorm sets dst to x / sqrt(mean(x^2) + eps) * weight.
func rmsNorm(dst, x []float64, weight []float32, eps float64) {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	f := 1 / math.Sqrt(ss/float64(len(x))+eps)
	for i, v := range x {
		dst[i] = v * f * float64(weight[i])
	}
}

// matVec sets dst = W x for W stored row-major [len(dst)][len(x)].
func matVec(dst []float64, w []float32, x []float64) {
	in := len(x)
	for o := range dst {
		row := w[o*in : (o+1)*in]
		var sum float64
		for i, v := range row {
			sum += float64(v) * x[i]
		}
		dst[o] = sum
	}
}

// rope rotates each head's consecutive pairs (2i, 2i+1) by pos*base^(-2i/d):
// llama.cpp's LLAMA_ROPE_TYPE_NORM, which the llama architecture uses on the
// GGUF's Q and K rows as stored.
func rope(vec []float64, hd, pos int, base float64) {
	for h := 0; h < len(vec); h += hd {
		for i := 0; i < hd; i += 2 {
			theta := float64(pos) * math.Pow(base, -float64(i)/float64(hd))
			sin, cos := math.Sincos(theta)
			a, b := vec[h+i], vec[h+i+1]
			vec[h+i] = a*cos - b*sin
			vec[h+i+1] = a*sin + b*cos
		}
	}
}

// causalAttention sets out (one head after another) to the softmax
// attention of the query q over the keys k and values v of every position
// so far, scaled by 1/sqrt(head size); query head h reads KV head
// h/(heads/kvHeads). scores is scratch of len(k) values.
func causalAttention(out, q []float64, k, v [][]float64, heads, kvHeads int, scores []float64) {
	hd := len(q) / heads
	group := heads / kvHeads
	scale := 1 / math.Sqrt(float64(hd))
	scores = scores[:len(k)]
	for head := range heads {
		qh := q[head*hd : (head+1)*hd]
		off := (head / group) * hd
		for u := range k {
			scores[u] = dot(qh, k[u][off:off+hd]) * scale
		}
		softmax(scores)
		o := out[head*hd : (head+1)*hd]
		clear(o)
		for u := range v {
			a := scores[u]
			for i, vi := range v[u][off : off+hd] {
				o[i] += a * vi
			}
		}
	}
}

func dot(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func addTo(dst, x []float64) {
	for i, v := range x {
		dst[i] += v
	}
}
