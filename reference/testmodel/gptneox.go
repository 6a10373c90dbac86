package testmodel

import (
	"fmt"
	"strconv"
)

// NewGPTNeoX is a float64 GPTNeoXForCausalLM (transformers'
// modeling_gpt_neox.py, the Pythia suite): pre-LayerNorm blocks with biases;
// one fused query_key_value Linear whose output holds, head after head, that
// head's q, k and v; rotate_half RoPE on the first rotary_pct of each head;
// and either the parallel residual x + attn(ln1(x)) + mlp(ln2(x)) or the
// sequential one; a final LayerNorm and a separate embed_out.
func NewGPTNeoX(config []byte, w map[string][]float32, opts ...RefOption) (*Reference, error) {
	var c struct {
		Vocab        int      `json:"vocab_size"`
		Hidden       int      `json:"hidden_size"`
		Heads        int      `json:"num_attention_heads"`
		Layers       int      `json:"num_hidden_layers"`
		Intermediate int      `json:"intermediate_size"`
		Positions    int      `json:"max_position_embeddings"`
		RotaryPct    *float64 `json:"rotary_pct"`
		RotaryBase   *float64 `json:"rotary_emb_base"`
		Eps          float64  `json:"layer_norm_eps"`
		Parallel     *bool    `json:"use_parallel_residual"`
		Act          string   `json:"hidden_act"`
		Tied         bool     `json:"tie_word_embeddings"`
	}
	if err := parseConfig(config, &c); err != nil {
		return nil, err
	}
	if c.Vocab < 1 || c.Hidden < 1 || c.Heads < 1 || c.Layers < 1 || c.Intermediate < 1 || c.Hidden%c.Heads != 0 || c.Tied {
		return nil, fmt.Errorf("reference: gptneox config %+v", c)
	}
	pct, base, parallel := 0.25, 10000.0, true
	if c.RotaryPct != nil {
		pct = *c.RotaryPct
	}
	if c.RotaryBase != nil {
		base = *c.RotaryBase
	}
	if c.Parallel != nil {
		parallel = *c.Parallel
	}
	gelu := newRefOptions(opts).gelu(c.Act)
	if gelu == nil {
		return nil, fmt.Errorf("reference: gptneox activation %q", c.Act)
	}
	e, v, ff, hd := c.Hidden, c.Vocab, c.Intermediate, c.Hidden/c.Heads
	rot := int(float64(hd) * pct)

	r := &weightReader{w: w}
	get := r.get
	embIn, embOut := get("gpt_neox.embed_in.weight", v*e), get("embed_out.weight", v*e)
	lnfW, lnfB := get("gpt_neox.final_layer_norm.weight", e), get("gpt_neox.final_layer_norm.bias", e)
	type block struct {
		ln1W, ln1B, qkvW, qkvB, denseW, denseB, ln2W, ln2B, upW, upB, downW, downB []float32
	}
	blocks := make([]block, c.Layers)
	for l := range blocks {
		p := "gpt_neox.layers." + strconv.Itoa(l) + "."
		blocks[l] = block{
			ln1W: get(p+"input_layernorm.weight", e), ln1B: get(p+"input_layernorm.bias", e),
			qkvW: get(p+"attention.query_key_value.weight", 3*e*e), qkvB: get(p+"attention.query_key_value.bias", 3*e),
			denseW: get(p+"attention.dense.weight", e*e), denseB: get(p+"attention.dense.bias", e),
			ln2W: get(p+"post_attention_layernorm.weight", e), ln2B: get(p+"post_attention_layernorm.bias", e),
			upW: get(p+"mlp.dense_h_to_4h.weight", ff*e), upB: get(p+"mlp.dense_h_to_4h.bias", ff),
			downW: get(p+"mlp.dense_4h_to_h.weight", e*ff), downB: get(p+"mlp.dense_4h_to_h.bias", e),
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	mlp := func(dst []float64, b block, x []float64, h, mid []float64) {
		layerNorm(h, x, b.ln2W, b.ln2B, c.Eps)
		linear(mid, b.upW, b.upB, h)
		for i, m := range mid {
			mid[i] = gelu(m)
		}
		linear(dst, b.downW, b.downB, mid)
	}
	forward := func(seq []int32, n int) [][]float64 {
		x := embedRows(embIn, seq, n, e)
		h, qkv := make([]float64, e), make([]float64, 3*e)
		q, k, vv := newRows(n, e), newRows(n, e), newRows(n, e)
		attnOut, ffOut, mid := make([]float64, e), make([]float64, e), make([]float64, ff)
		for _, b := range blocks {
			for t := range n {
				layerNorm(h, x[t], b.ln1W, b.ln1B, c.Eps)
				linear(qkv, b.qkvW, b.qkvB, h)
				for head := range c.Heads {
					src := qkv[head*3*hd:]
					copy(q[t][head*hd:(head+1)*hd], src[:hd])
					copy(k[t][head*hd:(head+1)*hd], src[hd:2*hd])
					copy(vv[t][head*hd:(head+1)*hd], src[2*hd:3*hd])
				}
				RotateHalf(q[t], hd, rot, t, base)
				RotateHalf(k[t], hd, rot, t, base)
			}
			att := attendAll(q, k, vv, c.Heads, c.Heads)
			for t := range n {
				linear(attnOut, b.denseW, b.denseB, att[t])
				if parallel {
					mlp(ffOut, b, x[t], h, mid) // reads x before the attention is added
					addTo(x[t], attnOut)
					addTo(x[t], ffOut)
				} else {
					addTo(x[t], attnOut)
					mlp(ffOut, b, x[t], h, mid)
					addTo(x[t], ffOut)
				}
			}
		}
		for t := range n {
			layerNorm(x[t], x[t], lnfW, lnfB, c.Eps)
		}
		return x
	}
	return wholeSequence(v, c.Positions, forward, func(dst, h []float64) { matVec(dst, embOut, h) }), nil
}
