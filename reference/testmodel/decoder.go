package testmodel

import (
	"fmt"
	"math"
)

// Decoder is a llama-family decoder-only transformer in Hugging Face's
// terms (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM): pre-norm
// blocks of RMSNorm, rotary attention with grouped KV heads, and a SwiGLU
// MLP. Its float64 forward pass (Reference) is written from the Hugging
// Face modeling code and reads the checkpoint's own tensors, so it shares
// nothing with the converter's renaming or llama.cpp's layout.
type Decoder struct {
	Hidden, FFN, Layers, Heads, KVHeads, HeadDim, Vocab, Context int
	Eps, RopeTheta                                               float64
	// Tied uses the embeddings as the output matrix (no lm_head).
	Tied bool
	// QKVBias: q_proj, k_proj and v_proj have biases (Qwen2, Llama's
	// attention_bias); OutBias: o_proj too (Llama's attention_bias).
	QKVBias, OutBias bool
	MLPBias          bool // gate_proj, up_proj, down_proj have biases (Llama's mlp_bias)
	QKNorm           bool // per-head RMSNorm of q and k before rope (Qwen3)
}

// outerShapes are the tensors around a decoder's layers in the Llama
// family's Hugging Face layout: the embedding, the final norm and, unless
// tied, the output head.
func outerShapes(vocab, hidden uint64, tied bool) map[string][]uint64 {
	s := map[string][]uint64{
		"model.embed_tokens.weight": {vocab, hidden},
		"model.norm.weight":         {hidden},
	}
	if !tied {
		s["lm_head.weight"] = []uint64{vocab, hidden}
	}
	return s
}

// Shapes lists the checkpoint's tensors by Hugging Face name, slowest
// dimension first.
func (d Decoder) Shapes() map[string][]uint64 {
	h, v, ff := uint64(d.Hidden), uint64(d.Vocab), uint64(d.FFN)
	q, kv, hd := uint64(d.Heads*d.HeadDim), uint64(d.KVHeads*d.HeadDim), uint64(d.HeadDim)
	s := outerShapes(v, h, d.Tied)
	for l := range d.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		s[p+"input_layernorm.weight"] = []uint64{h}
		s[p+"post_attention_layernorm.weight"] = []uint64{h}
		s[p+"self_attn.q_proj.weight"] = []uint64{q, h}
		s[p+"self_attn.k_proj.weight"] = []uint64{kv, h}
		s[p+"self_attn.v_proj.weight"] = []uint64{kv, h}
		s[p+"self_attn.o_proj.weight"] = []uint64{h, q}
		s[p+"mlp.gate_proj.weight"] = []uint64{ff, h}
		s[p+"mlp.up_proj.weight"] = []uint64{ff, h}
		s[p+"mlp.down_proj.weight"] = []uint64{h, ff}
		if d.QKVBias {
			s[p+"self_attn.q_proj.bias"] = []uint64{q}
			s[p+"self_attn.k_proj.bias"] = []uint64{kv}
			s[p+"self_attn.v_proj.bias"] = []uint64{kv}
		}
		if d.OutBias {
			s[p+"self_attn.o_proj.bias"] = []uint64{h}
		}
		if d.MLPBias {
			s[p+"mlp.gate_proj.bias"] = []uint64{ff}
			s[p+"mlp.up_proj.bias"] = []uint64{ff}
			s[p+"mlp.down_proj.bias"] = []uint64{h}
		}
		if d.QKNorm {
			s[p+"self_attn.q_norm.weight"] = []uint64{hd}
			s[p+"self_attn.k_norm.weight"] = []uint64{hd}
		}
	}
	return s
}

// Reference returns the model's float64 forward pass over weights (by
// Hugging Face name, as the checkpoint stores them).
func (d Decoder) Reference(weights map[string][]float32) (*Reference, error) {
	return checkedReference("decoder", d.Shapes(), weights, d.Vocab, d.Context, d.logProbs)
}

func (d Decoder) logProbs(w map[string][]float32, seq []int32, positions []int) []float64 {
	n := lastPosition(positions)
	hd, qDim, kvDim := d.HeadDim, d.Heads*d.HeadDim, d.KVHeads*d.HeadDim
	embd := w["model.embed_tokens.weight"]

	x := make([][]float64, n)
	for t := range n {
		x[t] = make([]float64, d.Hidden)
		for i, v := range embd[int(seq[t])*d.Hidden:][:d.Hidden] {
			x[t][i] = float64(v)
		}
	}
	q, k, v := make([][]float64, n), make([][]float64, n), make([][]float64, n)
	for t := range n {
		q[t], k[t], v[t] = make([]float64, qDim), make([]float64, kvDim), make([]float64, kvDim)
	}
	h := make([]float64, d.Hidden)
	attn := make([]float64, qDim)
	delta := make([]float64, d.Hidden)
	scores := make([]float64, n)
	gate, up := make([]float64, d.FFN), make([]float64, d.FFN)

	for l := range d.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		get := func(name string) []float32 { return w[p+name] }
		for t := range n {
			rmsNorm(h, x[t], get("input_layernorm.weight"), d.Eps)
			linear(q[t], get("self_attn.q_proj.weight"), get("self_attn.q_proj.bias"), h)
			linear(k[t], get("self_attn.k_proj.weight"), get("self_attn.k_proj.bias"), h)
			linear(v[t], get("self_attn.v_proj.weight"), get("self_attn.v_proj.bias"), h)
			if d.QKNorm {
				for head := 0; head < qDim; head += hd {
					rmsNorm(q[t][head:head+hd], q[t][head:head+hd], get("self_attn.q_norm.weight"), d.Eps)
				}
				for head := 0; head < kvDim; head += hd {
					rmsNorm(k[t][head:head+hd], k[t][head:head+hd], get("self_attn.k_norm.weight"), d.Eps)
				}
			}
			RotateHalf(q[t], hd, hd, t, d.RopeTheta)
			RotateHalf(k[t], hd, hd, t, d.RopeTheta)
		}
		outs := make([][]float64, n)
		for t := range n {
			causalAttention(attn, q[t], k[:t+1], v[:t+1], d.Heads, d.KVHeads, scores)
			outs[t] = make([]float64, d.Hidden)
			linear(outs[t], get("self_attn.o_proj.weight"), get("self_attn.o_proj.bias"), attn)
		}
		for t := range n {
			addTo(x[t], outs[t])
			rmsNorm(h, x[t], get("post_attention_layernorm.weight"), d.Eps)
			linear(gate, get("mlp.gate_proj.weight"), get("mlp.gate_proj.bias"), h)
			linear(up, get("mlp.up_proj.weight"), get("mlp.up_proj.bias"), h)
			for i, g := range gate {
				gate[i] = g / (1 + math.Exp(-g)) * up[i] // silu(gate) * up
			}
			linear(delta, get("mlp.down_proj.weight"), get("mlp.down_proj.bias"), gate)
			addTo(x[t], delta)
		}
	}

	norm := func(dst, x []float64) { rmsNorm(dst, x, w["model.norm.weight"], d.Eps) }
	return headLogProbs(x, seq, positions, d.Vocab, norm, headWeight(w, d.Tied), nil)
}

// linear sets dst = W x + b (b may be nil), W row-major [len(dst)][len(x)].
func linear(dst []float64, w, b []float32, x []float64) {
	matVec(dst, w, x)
	for i := range b {
		dst[i] += float64(b[i])
	}
}

// RotateHalf applies Hugging Face's rotary embedding (rotate_half) to each
// head of vec: within a head's first rot dimensions, dimension i and i+rot/2
// turn together by pos*base^(-2i/rot); the rest are left as they are
// (partial rotary when rot < hd). This is llama.cpp's NEOX rope.
func RotateHalf(vec []float64, hd, rot, pos int, base float64) {
	rotateHalf(vec, hd, rot, pos, base, false)
}

// rotateHalf is RotateHalf, with ggml's float32 angles when ggml is set
// (WithGGMLRope).
func rotateHalf(vec []float64, hd, rot, pos int, base float64, ggml bool) {
	half := rot / 2
	scale32 := float32(math.Pow(float64(float32(base)), float64(float32(-2)/float32(rot)))) // powf(base, -2.0f/rot)
	for h := 0; h < len(vec); h += hd {
		theta32 := float32(pos)
		for i := range half {
			theta := float64(pos) * math.Pow(base, -float64(2*i)/float64(rot))
			sin, cos := math.Sincos(theta)
			if ggml {
				sin, cos = math.Sincos(float64(theta32))
				sin, cos = float64(float32(sin)), float64(float32(cos))
				theta32 *= scale32
			}
			a, b := vec[h+i], vec[h+i+half]
			vec[h+i] = a*cos - b*sin
			vec[h+i+half] = b*cos + a*sin
		}
	}
}
