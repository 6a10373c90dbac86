package testmodel

import (
	"fmt"
	"math"
	"strconv"
)

// NewOlmo is a float64 OlmoForCausalLM (transformers' modeling_olmo.py,
// OLMo 1): llama's blocks with LayerNorms that have no weight or bias (eps
// fixed at 1e-5), q, k and v clamped to [-clip_qkv, clip_qkv] when it is
// set, rotate_half RoPE, SwiGLU.
func NewOlmo(config []byte, w map[string][]float32, _ ...RefOption) (*Reference, error) {
	return newOlmo(config, w, 1)
}

// NewOlmo2 is a float64 Olmo2ForCausalLM (transformers' modeling_olmo2.py):
// no norm before attention or MLP; instead RMSNorm over the whole q and k
// projections (before they split into heads), and RMSNorm on the attention
// and MLP outputs before each joins the residual; a final RMSNorm.
func NewOlmo2(config []byte, w map[string][]float32, _ ...RefOption) (*Reference, error) {
	return newOlmo(config, w, 2)
}

func newOlmo(config []byte, w map[string][]float32, version int) (*Reference, error) {
	var c struct {
		Vocab        int      `json:"vocab_size"`
		Hidden       int      `json:"hidden_size"`
		Heads        int      `json:"num_attention_heads"`
		KVHeads      int      `json:"num_key_value_heads"`
		Layers       int      `json:"num_hidden_layers"`
		Intermediate int      `json:"intermediate_size"`
		Positions    int      `json:"max_position_embeddings"`
		Theta        float64  `json:"rope_theta"`
		Clip         *float64 `json:"clip_qkv"`
		RMSEps       float64  `json:"rms_norm_eps"`
		Act          string   `json:"hidden_act"`
		Tied         bool     `json:"tie_word_embeddings"`
	}
	if err := parseConfig(config, &c); err != nil {
		return nil, err
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.Vocab < 1 || c.Hidden < 1 || c.Heads < 1 || c.Layers < 1 || c.Intermediate < 1 ||
		c.Hidden%c.Heads != 0 || c.Heads%c.KVHeads != 0 || c.Act != "silu" {
		return nil, fmt.Errorf("reference: olmo config %+v", c)
	}
	clip := math.Inf(1)
	if c.Clip != nil && version == 1 { // OLMo 2 has no clipping
		clip = *c.Clip
	}
	e, v, ff, hd := c.Hidden, c.Vocab, c.Intermediate, c.Hidden/c.Heads
	kvDim := c.KVHeads * hd

	r := &weightReader{w: w}
	get := r.get
	emb := get("model.embed_tokens.weight", v*e)
	head := emb
	if !c.Tied {
		head = get("lm_head.weight", v*e)
	}
	var finalNorm []float32
	if version == 2 {
		finalNorm = get("model.norm.weight", e)
	}
	type block struct {
		q, k, v, o, gate, up, down     []float32
		qNorm, kNorm, postAttn, postFF []float32 // OLMo 2
	}
	blocks := make([]block, c.Layers)
	for l := range blocks {
		p := "model.layers." + strconv.Itoa(l) + "."
		b := block{
			q: get(p+"self_attn.q_proj.weight", e*e), k: get(p+"self_attn.k_proj.weight", kvDim*e),
			v: get(p+"self_attn.v_proj.weight", kvDim*e), o: get(p+"self_attn.o_proj.weight", e*e),
			gate: get(p+"mlp.gate_proj.weight", ff*e), up: get(p+"mlp.up_proj.weight", ff*e),
			down: get(p+"mlp.down_proj.weight", e*ff),
		}
		if version == 2 {
			b.qNorm, b.kNorm = get(p+"self_attn.q_norm.weight", e), get(p+"self_attn.k_norm.weight", kvDim)
			b.postAttn = get(p+"post_attention_layernorm.weight", e)
			b.postFF = get(p+"post_feedforward_layernorm.weight", e)
		}
		blocks[l] = b
	}
	if r.err != nil {
		return nil, r.err
	}
	const olmoEps = 1e-5 // OlmoLayerNorm's, whatever the config says
	clamp := func(x []float64) {
		for i, vi := range x {
			x[i] = math.Max(-clip, math.Min(clip, vi))
		}
	}
	forward := func(seq []int32, n int) [][]float64 {
		x := embedRows(emb, seq, n, e)
		h := make([]float64, e)
		q, k, vv := newRows(n, e), newRows(n, kvDim), newRows(n, kvDim)
		delta, gate, up := make([]float64, e), make([]float64, ff), make([]float64, ff)
		for _, b := range blocks {
			for t := range n {
				in := x[t]
				if version == 1 {
					layerNorm(h, x[t], nil, nil, olmoEps)
					in = h
				}
				matVec(q[t], b.q, in)
				matVec(k[t], b.k, in)
				matVec(vv[t], b.v, in)
				if version == 1 {
					clamp(q[t])
					clamp(k[t])
					clamp(vv[t])
				} else {
					rmsNorm(q[t], q[t], b.qNorm, c.RMSEps)
					rmsNorm(k[t], k[t], b.kNorm, c.RMSEps)
				}
				RotateHalf(q[t], hd, hd, t, c.Theta)
				RotateHalf(k[t], hd, hd, t, c.Theta)
			}
			att := attendAll(q, k, vv, c.Heads, c.KVHeads)
			for t := range n {
				matVec(delta, b.o, att[t])
				if version == 2 {
					rmsNorm(delta, delta, b.postAttn, c.RMSEps)
				}
				addTo(x[t], delta)
				in := x[t]
				if version == 1 {
					layerNorm(h, x[t], nil, nil, olmoEps)
					in = h
				}
				matVec(gate, b.gate, in)
				matVec(up, b.up, in)
				for i, g := range gate {
					gate[i] = silu(g) * up[i]
				}
				matVec(delta, b.down, gate)
				if version == 2 {
					rmsNorm(delta, delta, b.postFF, c.RMSEps)
				}
				addTo(x[t], delta)
			}
		}
		for t := range n {
			if version == 1 {
				layerNorm(x[t], x[t], nil, nil, olmoEps)
			} else {
				rmsNorm(x[t], x[t], finalNorm, c.RMSEps)
			}
		}
		return x
	}
	return wholeSequence(v, c.Positions, forward, func(dst, h []float64) { matVec(dst, head, h) }), nil
}
