package testmodel

import (
	"fmt"
	"math"
)

// Lfm2 is Hugging Face's Lfm2ForCausalLM (modeling_lfm2.py), described by
// its config.json fields. Its float64 forward pass (Reference) is written
// from that definition: pre-norm blocks whose operator is either attention
// (q/k layernorms, rotate-half RoPE) or a gated short causal convolution
// (in_proj to B, C, x; C * conv(B * x); out_proj), each followed by a
// SwiGLU feed-forward, and a final norm (embedding_norm).
type Lfm2 struct {
	Hidden, FFN, Layers, Heads, KVHeads, Vocab, Context int
	ConvLCache                                          int // conv_L_cache: the convolution's kernel size
	Eps, RopeTheta                                      float64
	LayerTypes                                          []string // "conv" or "full_attention"
	Tied                                                bool
}

// Shapes lists the checkpoint's tensors by Hugging Face name, slowest
// dimension first; conv weights as Conv1d stores them, [hidden, 1, L].
func (m Lfm2) Shapes() map[string][]uint64 {
	h, v, ff := uint64(m.Hidden), uint64(m.Vocab), uint64(m.FFN)
	hd := uint64(m.Hidden / m.Heads)
	kv := hd * uint64(m.KVHeads)
	s := map[string][]uint64{
		"model.embed_tokens.weight":   {v, h},
		"model.embedding_norm.weight": {h},
	}
	if !m.Tied {
		s["lm_head.weight"] = []uint64{v, h}
	}
	for l, typ := range m.LayerTypes {
		p := fmt.Sprintf("model.layers.%d.", l)
		s[p+"operator_norm.weight"] = []uint64{h}
		s[p+"ffn_norm.weight"] = []uint64{h}
		s[p+"feed_forward.w1.weight"] = []uint64{ff, h}
		s[p+"feed_forward.w3.weight"] = []uint64{ff, h}
		s[p+"feed_forward.w2.weight"] = []uint64{h, ff}
		if typ == "conv" {
			s[p+"conv.conv.weight"] = []uint64{h, 1, uint64(m.ConvLCache)}
			s[p+"conv.in_proj.weight"] = []uint64{3 * h, h}
			s[p+"conv.out_proj.weight"] = []uint64{h, h}
			continue
		}
		s[p+"self_attn.q_proj.weight"] = []uint64{h, h}
		s[p+"self_attn.k_proj.weight"] = []uint64{kv, h}
		s[p+"self_attn.v_proj.weight"] = []uint64{kv, h}
		s[p+"self_attn.out_proj.weight"] = []uint64{h, h}
		s[p+"self_attn.q_layernorm.weight"] = []uint64{hd}
		s[p+"self_attn.k_layernorm.weight"] = []uint64{hd}
	}
	return s
}

// Reference returns the model's float64 forward pass over weights (by
// Hugging Face name, as the checkpoint stores them).
func (m Lfm2) Reference(weights map[string][]float32) (*Reference, error) {
	if len(m.LayerTypes) != m.Layers || m.Hidden%m.Heads != 0 || m.Heads%m.KVHeads != 0 {
		return nil, fmt.Errorf("lfm2 reference: %d layer types, %d layers, hidden %d, %d heads, %d KV heads",
			len(m.LayerTypes), m.Layers, m.Hidden, m.Heads, m.KVHeads)
	}
	for i, typ := range m.LayerTypes {
		if typ != "conv" && typ != "full_attention" {
			return nil, fmt.Errorf("lfm2 reference: layer %d has type %q", i, typ)
		}
	}
	return checkedReference("lfm2", m.Shapes(), weights, m.Vocab, m.Context, m.logProbs)
}

func (m Lfm2) logProbs(w map[string][]float32, seq []int32, positions []int) []float64 {
	c := m
	n := lastPosition(positions)
	H, hd := c.Hidden, c.Hidden/c.Heads
	kvDim := c.KVHeads * hd
	embd := w["model.embed_tokens.weight"]
	x := rows(n, H)
	for t := range n {
		for i, v := range embd[int(seq[t])*H : (int(seq[t])+1)*H] {
			x[t][i] = float64(v)
		}
	}
	hs := rows(n, H) // normed inputs of the operator
	outs := rows(n, H)
	q, k, v := rows(n, H), rows(n, kvDim), rows(n, kvDim)
	bcx := rows(n, 3*H)
	y := make([]float64, H)
	attn := make([]float64, H)
	scores := make([]float64, n)
	h := make([]float64, H)
	gate, up := make([]float64, c.FFN), make([]float64, c.FFN)
	delta := make([]float64, H)
	L := c.ConvLCache
	for l, typ := range c.LayerTypes {
		get := func(name string) []float32 { return w[fmt.Sprintf("model.layers.%d.%s.weight", l, name)] }
		for t := range n {
			rmsNorm(hs[t], x[t], get("operator_norm"), c.Eps)
		}
		if typ == "full_attention" {
			for t := range n {
				matVec(q[t], get("self_attn.q_proj"), hs[t])
				matVec(k[t], get("self_attn.k_proj"), hs[t])
				matVec(v[t], get("self_attn.v_proj"), hs[t])
				for off := 0; off < H; off += hd {
					rmsNorm(q[t][off:off+hd], q[t][off:off+hd], get("self_attn.q_layernorm"), c.Eps)
					RotateHalf(q[t][off:off+hd], hd, hd, t, c.RopeTheta)
				}
				for off := 0; off < kvDim; off += hd {
					rmsNorm(k[t][off:off+hd], k[t][off:off+hd], get("self_attn.k_layernorm"), c.Eps)
					RotateHalf(k[t][off:off+hd], hd, hd, t, c.RopeTheta)
				}
			}
			for t := range n {
				causalAttention(attn, q[t], k[:t+1], v[:t+1], c.Heads, c.KVHeads, scores)
				matVec(outs[t], get("self_attn.out_proj"), attn)
			}
		} else {
			// B, C and x are the three thirds of in_proj's output; the
			// depthwise causal convolution reads B*x at t-L+1 .. t.
			conv := get("conv.conv")
			for t := range n {
				matVec(bcx[t], get("conv.in_proj"), hs[t])
				for i := range H {
					bcx[t][2*H+i] *= bcx[t][i] // x := B * x
				}
			}
			for t := range n {
				for i := range H {
					var s float64
					for j := range L {
						if u := t - (L - 1) + j; u >= 0 {
							s += float64(conv[i*L+j]) * bcx[u][2*H+i]
						}
					}
					y[i] = bcx[t][H+i] * s // C * conv
				}
				matVec(outs[t], get("conv.out_proj"), y)
			}
		}
		for t := range n {
			addTo(x[t], outs[t])
			rmsNorm(h, x[t], get("ffn_norm"), c.Eps)
			matVec(gate, get("feed_forward.w1"), h)
			matVec(up, get("feed_forward.w3"), h)
			for i, g := range gate {
				gate[i] = g / (1 + math.Exp(-g)) * up[i]
			}
			matVec(delta, get("feed_forward.w2"), gate)
			addTo(x[t], delta)
		}
	}
	norm := func(dst, x []float64) { rmsNorm(dst, x, w["model.embedding_norm.weight"], c.Eps) }
	return headLogProbs(x, seq, positions, c.Vocab, norm, headWeight(w, c.Tied), nil)
}
