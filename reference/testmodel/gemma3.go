package testmodel

import (
	"fmt"
	"math"

	"github.com/udgamlabs/udgam-ci/runner"
)

// Gemma3 is Hugging Face's Gemma3ForCausalLM (modeling_gemma3.py, eager
// attention), text only, described by its config.json fields. Its float64
// forward pass (Reference) is written from that definition: the embedding
// scaled by sqrt(hidden), RMSNorm scaling by (1 + w), per-head q/k norms,
// rotate-half RoPE with a local base on sliding-window layers, four norms
// per block, GELU (tanh) gating, and optional final logit soft-capping.
type Gemma3 struct {
	Hidden, FFN, Layers, Heads, KVHeads, HeadDim, Vocab, Context int
	Eps                                                          float64 // rms_norm_eps
	RopeTheta                                                    float64 // global layers
	RopeLocalTheta                                               float64 // sliding-window layers (rope_local_base_freq)
	QueryPreAttnScalar                                           float64 // scores are q.k / sqrt(this)
	SlidingWindow                                                int     // a sliding layer sees this many tokens, itself included
	LayerTypes                                                   []string
	FinalLogitSoftcap                                            float64 // 0: none
	Tied                                                         bool    // lm_head is the embedding
}

// Shapes lists the checkpoint's tensors by Hugging Face name, slowest
// dimension first.
func (m Gemma3) Shapes() map[string][]uint64 {
	h, v, ff := uint64(m.Hidden), uint64(m.Vocab), uint64(m.FFN)
	q, kv, hd := uint64(m.Heads*m.HeadDim), uint64(m.KVHeads*m.HeadDim), uint64(m.HeadDim)
	s := outerShapes(v, h, m.Tied)
	for l := range m.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		for _, n := range []string{"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"} {
			s[p+n+".weight"] = []uint64{h}
		}
		s[p+"self_attn.q_norm.weight"] = []uint64{hd}
		s[p+"self_attn.k_norm.weight"] = []uint64{hd}
		s[p+"self_attn.q_proj.weight"] = []uint64{q, h}
		s[p+"self_attn.k_proj.weight"] = []uint64{kv, h}
		s[p+"self_attn.v_proj.weight"] = []uint64{kv, h}
		s[p+"self_attn.o_proj.weight"] = []uint64{h, q}
		s[p+"mlp.gate_proj.weight"] = []uint64{ff, h}
		s[p+"mlp.up_proj.weight"] = []uint64{ff, h}
		s[p+"mlp.down_proj.weight"] = []uint64{h, ff}
	}
	return s
}

// Reference returns the model's float64 forward pass over weights (by
// Hugging Face name, as the checkpoint stores them).
func (m Gemma3) Reference(weights map[string][]float32) (*Reference, error) {
	return m.ReferenceWith(weights)
}

// ReferenceWith is Reference computed as opts say.
func (m Gemma3) ReferenceWith(weights map[string][]float32, opts ...RefOption) (*Reference, error) {
	if len(m.LayerTypes) != m.Layers {
		return nil, fmt.Errorf("gemma3 reference: %d layer types for %d layers", len(m.LayerTypes), m.Layers)
	}
	o := newRefOptions(opts)
	return checkedReference("gemma3", m.Shapes(), weights, m.Vocab, m.Context, func(w map[string][]float32, seq []int32, positions []int) []float64 {
		return m.logProbs(w, seq, positions, o)
	})
}

// checkedReference is the Reference of a forward pass over weights by
// Hugging Face name, once checkShapes has found every tensor it reads.
func checkedReference(arch string, shapes map[string][]uint64, weights map[string][]float32, vocab, context int,
	logProbs func(w map[string][]float32, seq []int32, positions []int) []float64) (*Reference, error) {
	if err := checkShapes(arch, shapes, weights); err != nil {
		return nil, err
	}
	return &Reference{Vocab: vocab, Context: context, LogProbs: func(seq []int32, positions []int) []float64 {
		return logProbs(weights, seq, positions)
	}}, nil
}

// checkShapes requires every tensor of shapes, with its element count.
func checkShapes(arch string, shapes map[string][]uint64, weights map[string][]float32) error {
	for name, shape := range shapes {
		n := uint64(1)
		for _, x := range shape {
			n *= x
		}
		if uint64(len(weights[name])) != n {
			return fmt.Errorf("%s reference: tensor %s has %d values, want %d", arch, name, len(weights[name]), n)
		}
	}
	return nil
}

func (m Gemma3) logProbs(w map[string][]float32, seq []int32, positions []int, o refOptions) []float64 {
	c := m
	n := lastPosition(positions)
	hd, qDim, kvDim := c.HeadDim, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	embd := w["model.embed_tokens.weight"]
	scale := math.Sqrt(float64(c.Hidden))
	x := make([][]float64, n)
	for t := range n {
		x[t] = make([]float64, c.Hidden)
		row := embd[int(seq[t])*c.Hidden:]
		for i := range x[t] {
			x[t][i] = float64(row[i]) * scale
		}
	}
	q, k, v := rows(n, qDim), rows(n, kvDim), rows(n, kvDim)
	h := make([]float64, c.Hidden)
	attn, qs := make([]float64, qDim), make([]float64, qDim)
	delta := make([]float64, c.Hidden)
	gate, up := make([]float64, c.FFN), make([]float64, c.FFN)
	scores := make([]float64, n)
	// Scores are q.k / sqrt(query_pre_attn_scalar); causalAttention divides
	// by sqrt(head size), so queries are rescaled by the ratio.
	qScale := math.Sqrt(float64(hd) / c.QueryPreAttnScalar)
	for l := range c.Layers {
		get := func(name string) []float32 { return w[fmt.Sprintf("model.layers.%d.%s.weight", l, name)] }
		sliding := c.LayerTypes[l] == "sliding_attention"
		base := c.RopeTheta
		if sliding {
			base = c.RopeLocalTheta
		}
		for t := range n {
			gemmaNorm(h, x[t], get("input_layernorm"), c.Eps)
			matVec(q[t], get("self_attn.q_proj"), h)
			matVec(k[t], get("self_attn.k_proj"), h)
			matVec(v[t], get("self_attn.v_proj"), h)
			for head := 0; head < qDim; head += hd {
				gemmaNorm(q[t][head:head+hd], q[t][head:head+hd], get("self_attn.q_norm"), c.Eps)
				rotateHalf(q[t][head:head+hd], hd, hd, t, base, o.ggmlRope)
			}
			for head := 0; head < kvDim; head += hd {
				gemmaNorm(k[t][head:head+hd], k[t][head:head+hd], get("self_attn.k_norm"), c.Eps)
				rotateHalf(k[t][head:head+hd], hd, hd, t, base, o.ggmlRope)
			}
		}
		outs := rows(n, c.Hidden)
		for t := range n {
			first := 0
			if sliding {
				first = max(0, t-c.SlidingWindow+1)
			}
			for i, x := range q[t] {
				qs[i] = x * qScale
			}
			causalAttention(attn, qs, k[first:t+1], v[first:t+1], c.Heads, c.KVHeads, scores)
			matVec(outs[t], get("self_attn.o_proj"), attn)
		}
		for t := range n {
			gemmaNorm(outs[t], outs[t], get("post_attention_layernorm"), c.Eps)
			addTo(x[t], outs[t])
			gemmaNorm(h, x[t], get("pre_feedforward_layernorm"), c.Eps)
			matVec(gate, get("mlp.gate_proj"), h)
			matVec(up, get("mlp.up_proj"), h)
			for i, g := range gate {
				gate[i] = runner.GELUTanh(g) * up[i]
			}
			matVec(delta, get("mlp.down_proj"), gate)
			gemmaNorm(delta, delta, get("post_feedforward_layernorm"), c.Eps)
			addTo(x[t], delta)
		}
	}
	norm := func(dst, x []float64) { gemmaNorm(dst, x, w["model.norm.weight"], c.Eps) }
	var softcap func([]float64)
	if cap := c.FinalLogitSoftcap; cap > 0 {
		softcap = func(logits []float64) {
			for j, z := range logits {
				logits[j] = cap * math.Tanh(z/cap)
			}
		}
	}
	return headLogProbs(x, seq, positions, c.Vocab, norm, headWeight(w, c.Tied), softcap)
}

func rows(n, width int) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, width)
	}
	return out
}

// gemmaNorm sets dst to x / sqrt(mean(x^2) + eps) * (1 + w): Gemma stores
// its norm weights as offsets from one. dst may be x.
func gemmaNorm(dst, x []float64, w []float32, eps float64) {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	f := 1 / math.Sqrt(ss/float64(len(x))+eps)
	for i, v := range x {
		dst[i] = v * f * (1 + float64(w[i]))
	}
}
