package testmodel

import (
	"fmt"
	"strconv"
)

// NewGPT2 is a float64 GPT2LMHeadModel (transformers' modeling_gpt2.py):
// learned absolute positions added to the token embeddings, pre-LayerNorm
// blocks with biases, one fused Conv1D for q, k and v (weights [in][out]),
// gelu_new, a final LayerNorm and an lm_head tied to the embeddings unless
// tie_word_embeddings is false. Tensor names may carry the "transformer."
// prefix (what transformers saves) or not (the original OpenAI files).
func NewGPT2(config []byte, w map[string][]float32, opts ...RefOption) (*Reference, error) {
	var c struct {
		Vocab      int      `json:"vocab_size"`
		Embd       int      `json:"n_embd"`
		Heads      int      `json:"n_head"`
		Layers     int      `json:"n_layer"`
		Positions  int      `json:"n_positions"`
		Inner      *int     `json:"n_inner"`
		Eps        *float64 `json:"layer_norm_epsilon"`
		Act        *string  `json:"activation_function"`
		Tied       *bool    `json:"tie_word_embeddings"`
		ScaleAttn  *bool    `json:"scale_attn_weights"`
		ScaleLayer bool     `json:"scale_attn_by_inverse_layer_idx"`
	}
	if err := parseConfig(config, &c); err != nil {
		return nil, err
	}
	if c.Vocab < 1 || c.Embd < 1 || c.Heads < 1 || c.Layers < 1 || c.Positions < 1 || c.Embd%c.Heads != 0 {
		return nil, fmt.Errorf("reference: gpt2 config sizes %+v", c)
	}
	inner, eps, act, tied := 4*c.Embd, 1e-5, "gelu_new", true
	if c.Inner != nil {
		inner = *c.Inner
	}
	if c.Eps != nil {
		eps = *c.Eps
	}
	if c.Act != nil {
		act = *c.Act
	}
	if c.Tied != nil {
		tied = *c.Tied
	}
	gelu := newRefOptions(opts).gelu(act)
	if gelu == nil {
		return nil, fmt.Errorf("reference: gpt2 activation %q", act)
	}
	if c.ScaleAttn != nil && !*c.ScaleAttn || c.ScaleLayer {
		return nil, fmt.Errorf("reference: gpt2 attention scaling other than 1/sqrt(head size)")
	}

	prefix := "transformer."
	if _, ok := w[prefix+"wte.weight"]; !ok {
		prefix = ""
	}
	e, v := c.Embd, c.Vocab
	r := &weightReader{w: w}
	get := r.get
	wte, wpe := get(prefix+"wte.weight", v*e), get(prefix+"wpe.weight", c.Positions*e)
	lnfW, lnfB := get(prefix+"ln_f.weight", e), get(prefix+"ln_f.bias", e)
	head := wte
	if !tied {
		head = get("lm_head.weight", v*e)
	}
	type block struct {
		ln1W, ln1B, qkvW, qkvB, projW, projB, ln2W, ln2B, fcW, fcB, outW, outB []float32
	}
	blocks := make([]block, c.Layers)
	for l := range blocks {
		p := prefix + "h." + strconv.Itoa(l) + "."
		blocks[l] = block{
			ln1W: get(p+"ln_1.weight", e), ln1B: get(p+"ln_1.bias", e),
			qkvW: get(p+"attn.c_attn.weight", e*3*e), qkvB: get(p+"attn.c_attn.bias", 3*e),
			projW: get(p+"attn.c_proj.weight", e*e), projB: get(p+"attn.c_proj.bias", e),
			ln2W: get(p+"ln_2.weight", e), ln2B: get(p+"ln_2.bias", e),
			fcW: get(p+"mlp.c_fc.weight", e*inner), fcB: get(p+"mlp.c_fc.bias", inner),
			outW: get(p+"mlp.c_proj.weight", inner*e), outB: get(p+"mlp.c_proj.bias", e),
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	forward := func(seq []int32, n int) [][]float64 {
		x := embedRows(wte, seq, n, e)
		for t := range n {
			for i := range e {
				x[t][i] += float64(wpe[t*e+i])
			}
		}
		h, qkv := make([]float64, e), make([]float64, 3*e)
		q, k, vv := newRows(n, e), newRows(n, e), newRows(n, e)
		delta, mid := make([]float64, e), make([]float64, inner)
		for _, b := range blocks {
			for t := range n {
				layerNorm(h, x[t], b.ln1W, b.ln1B, eps)
				conv1d(qkv, b.qkvW, b.qkvB, h)
				copy(q[t], qkv[:e])
				copy(k[t], qkv[e:2*e])
				copy(vv[t], qkv[2*e:])
			}
			att := attendAll(q, k, vv, c.Heads, c.Heads)
			for t := range n {
				conv1d(delta, b.projW, b.projB, att[t])
				addTo(x[t], delta)
				layerNorm(h, x[t], b.ln2W, b.ln2B, eps)
				conv1d(mid, b.fcW, b.fcB, h)
				for i, m := range mid {
					mid[i] = gelu(m)
				}
				conv1d(delta, b.outW, b.outB, mid)
				addTo(x[t], delta)
			}
		}
		for t := range n {
			layerNorm(x[t], x[t], lnfW, lnfB, eps)
		}
		return x
	}
	// Its context is n_positions: there are no positions beyond.
	return wholeSequence(v, c.Positions, forward, func(dst, h []float64) { matVec(dst, head, h) }), nil
}
