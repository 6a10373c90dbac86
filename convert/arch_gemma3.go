package convert

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/udgamlabs/udgam-ci/ggufspec"
)

// Gemma3 is Gemma3ForCausalLM, Gemma 3's text model (270M, 1B): four
// norms per block, all scaling by (1 + w); per-head q/k norms; the
// embedding scaled by sqrt(hidden_size); GELU (tanh) gating; and five
// sliding-window layers to each global one.
var Gemma3 = &Architecture{
	Classes: []string{"Gemma3ForCausalLM"},
	GGUF:    "gemma3",
	Kind:    "transformer",
	Convert: byShape(readGemma3Config),
}

// gemma3Config is what the converter takes from a Gemma 3 config.json,
// read with Gemma3TextConfig's defaults and checked against what
// llama.cpp's gemma3 graph computes.
type gemma3Config struct {
	hidden, ffn, layers, heads, kvHeads, headDim, vocab, context int
	eps, ropeTheta, softcap                                      float64
	tied                                                         bool
	// window is the sliding window, 0 when every layer attends globally.
	window int
}

func readGemma3Config(cfg Config, _ Weights) (gemma3Config, error) {
	r := cfg.Reader()
	c := gemma3Config{
		hidden:  r.Int("hidden_size"),
		ffn:     r.Int("intermediate_size"),
		layers:  r.Int("num_hidden_layers"),
		heads:   r.Int("num_attention_heads"),
		kvHeads: r.IntOr("num_key_value_heads", 4),
		headDim: r.IntOr("head_dim", 256),
		vocab:   r.Int("vocab_size"),
		context: r.IntOr("max_position_embeddings", 131072),
		eps:     r.FloatOr("rms_norm_eps", 1e-6),
		softcap: r.FloatOr("final_logit_softcapping", 0),
		tied:    r.BoolOr("tie_word_embeddings", true),
	}
	window := r.IntOr("sliding_window", 4096)
	scalar := r.FloatOr("query_pre_attn_scalar", 256)
	r.Refuse("hidden_activation", `"gelu_pytorch_tanh"`)
	r.Refuse("hidden_act", `"gelu_pytorch_tanh"`)
	// llama.cpp's gemma3 graph has no attention soft-capping, no biases,
	// no bidirectional mask, and no rope scaling on either base.
	r.Refuse("attn_logit_softcapping")
	r.Refuse("attention_bias", "false")
	r.Refuse("use_bidirectional_attention", "false")
	r.Refuse("rope_scaling")
	c.ropeTheta = gemma3Rope(r)
	types := gemma3LayerTypes(r, c.layers)
	if err := r.Err(); err != nil {
		return c, err
	}
	switch {
	case c.kvHeads <= 0 || c.heads%c.kvHeads != 0:
		return c, fmt.Errorf("config.json: num_key_value_heads %d does not divide num_attention_heads %d", c.kvHeads, c.heads)
	case c.headDim <= 0 || c.headDim%2 != 0:
		return c, fmt.Errorf("config.json: head_dim %d is not a positive even number (rope turns pairs)", c.headDim)
	case c.eps <= 0 || c.softcap < 0:
		return c, fmt.Errorf("config.json: rms_norm_eps %v, final_logit_softcapping %v: want positive values", c.eps, c.softcap)
	}
	// llama.cpp scales queries by 1/sqrt(head_dim), or by
	// 1/sqrt(hidden/heads) for the 62-layer (27B) model.
	if want := gemma3QueryScalar(c.layers, c.hidden, c.heads, c.headDim); scalar != want {
		return c, fmt.Errorf("config.json: query_pre_attn_scalar = %v is not supported: llama.cpp's gemma3 scales queries by 1/sqrt(%v) for this shape", scalar, want)
	}
	switch {
	case !slices.Contains(types, "sliding_attention"):
		// No sliding layer: written without a window, llama.cpp attends
		// globally everywhere.
	case !slices.Equal(types, gemma3Pattern(c.layers, ggufspec.Gemma3SWAPattern)):
		// llama.cpp's loader sets this pattern whatever the GGUF says.
		return c, fmt.Errorf("config.json: layer_types %v is not supported: llama.cpp's gemma3 makes every %dth layer global and the others sliding-window", types, ggufspec.Gemma3SWAPattern)
	case c.layers < ggufspec.Gemma3SWAPattern:
		// llama.cpp would build a global-attention cache with no layer,
		// and abort on its first decode (GGML_ASSERT(buffer)).
		return c, fmt.Errorf("config.json: num_hidden_layers = %d is not supported: llama.cpp's gemma3 needs a global-attention layer (layer %d) when sliding_window is set", c.layers, ggufspec.Gemma3SWAPattern-1)
	case window <= 0:
		return c, fmt.Errorf("config.json: sliding_window = %d with sliding_attention layers; want a positive window", window)
	default:
		c.window = window
	}
	return c, nil
}

func (c gemma3Config) kv() KV {
	kv := KV{
		"gemma3.context_length":                   uint32(c.context),
		"gemma3.embedding_length":                 uint32(c.hidden),
		"gemma3.block_count":                      uint32(c.layers),
		"gemma3.feed_forward_length":              uint32(c.ffn),
		"gemma3.attention.head_count":             uint32(c.heads),
		"gemma3.attention.head_count_kv":          uint32(c.kvHeads),
		"gemma3.attention.key_length":             uint32(c.headDim),
		"gemma3.attention.value_length":           uint32(c.headDim),
		"gemma3.attention.layer_norm_rms_epsilon": float32(c.eps),
		"gemma3.rope.freq_base":                   float32(c.ropeTheta),
		"gemma3.rope.dimension_count":             uint32(c.headDim),
		"gemma3.vocab_size":                       uint32(c.vocab),
	}
	if c.window > 0 {
		kv["gemma3.attention.sliding_window"] = uint32(c.window)
	}
	if c.softcap > 0 {
		kv["gemma3.final_logit_softcapping"] = float32(c.softcap)
	}
	return kv
}

func (c gemma3Config) tensors(w Weights) ([]Tensor, error) {
	tk := &Taker{W: w, Names: gemma3Names}
	take := tk.Named
	// Gemma stores norm weights as offsets from one; llama.cpp multiplies
	// by the weight itself. Hugging Face adds the one in float32, as here.
	norm := func(hf string, n int) Tensor {
		t := take(hf, uint64(n))
		t.F32 = true
		return t.Map(plusOne)
	}
	h, v, ff := uint64(c.hidden), uint64(c.vocab), uint64(c.ffn)
	q, kvDim := uint64(c.heads*c.headDim), uint64(c.kvHeads*c.headDim)
	ts := []Tensor{
		take("model.embed_tokens.weight", v, h),
		norm("model.norm.weight", c.hidden),
	}
	out, err := outputMatrix(w, c.tied, "lm_head.weight", "model.embed_tokens.weight", v, h)
	if err != nil {
		return nil, err
	}
	if out != nil {
		ts = append(ts, *out)
	}
	for l := range c.layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		// Gemma turns (i, i+d/2), as llama.cpp's NEOX rope does: q and k
		// keep their order.
		ts = append(ts,
			norm(p+"input_layernorm.weight", c.hidden),
			take(p+"self_attn.q_proj.weight", q, h),
			take(p+"self_attn.k_proj.weight", kvDim, h),
			take(p+"self_attn.v_proj.weight", kvDim, h),
			norm(p+"self_attn.q_norm.weight", c.headDim),
			norm(p+"self_attn.k_norm.weight", c.headDim),
			take(p+"self_attn.o_proj.weight", h, q),
			norm(p+"post_attention_layernorm.weight", c.hidden),
			norm(p+"pre_feedforward_layernorm.weight", c.hidden),
			take(p+"mlp.gate_proj.weight", ff, h),
			take(p+"mlp.up_proj.weight", ff, h),
			take(p+"mlp.down_proj.weight", h, ff),
			norm(p+"post_feedforward_layernorm.weight", c.hidden),
		)
	}
	if err := tk.Err(); err != nil {
		return nil, err
	}
	return ts, nil
}

// gemma3Names are Gemma 3's tensors: the decoder's with the sandwich
// norms and a norm before the MLP.
var gemma3Names = merge(decoderNames, sandwichNorms, tensorNames{
	"model.layers.N.pre_feedforward_layernorm.weight": "blk.N.ffn_norm.weight",
})

// gemma3Rope returns the global layers' rope base, read as
// Gemma3TextConfig reads it: transformers 5 keeps one rope dict per layer
// type in rope_parameters (full_attention, sliding_attention), each
// taking rope_theta, or rope_local_base_freq for the sliding one, when it
// sets no base of its own. Only unscaled rope is converted, and llama.cpp
// turns sliding-window layers with a base of 10000, fixed.
func gemma3Rope(r *ConfigReader) float64 {
	theta, thetaKey := r.FloatOr("rope_theta", 1e6), "rope_theta"
	local, localKey := r.FloatOr("rope_local_base_freq", 1e4), "rope_local_base_freq"
	if raw := r.Raw("rope_parameters"); raw != nil {
		var byType map[string]json.RawMessage
		if err := json.Unmarshal(raw, &byType); err != nil {
			r.Fail(fmt.Errorf("config.json: rope_parameters: %w", err))
			return 0
		}
		for _, k := range slices.Sorted(maps.Keys(byType)) {
			name := "rope_parameters." + k
			if k != "full_attention" && k != "sliding_attention" {
				r.Fail(fmt.Errorf("config.json: %s is not supported by the converter: Gemma 3's rope_parameters holds one dict per layer type (full_attention, sliding_attention)", name))
				return 0
			}
			if string(byType[k]) == "null" {
				continue
			}
			t, ok := r.PlainRope(name, byType[k])
			switch {
			case !ok:
			case k == "full_attention":
				theta, thetaKey = t, name+".rope_theta"
			default:
				local, localKey = t, name+".rope_theta"
			}
		}
	}
	if local != 1e4 && r.Err() == nil {
		r.Fail(fmt.Errorf("config.json: %s = %v is not supported: llama.cpp's gemma3 turns sliding-window layers with a base of 10000", localKey, local))
	}
	if theta <= 0 && r.Err() == nil {
		r.Fail(fmt.Errorf("config.json: %s = %v; want a positive number", thetaKey, theta))
	}
	return theta
}

// gemma3LayerTypes reads layer_types, or derives it as Hugging Face does
// from sliding_window_pattern (6 when absent): layer i is global when
// (i+1) is a multiple of the pattern.
func gemma3LayerTypes(r *ConfigReader, layers int) []string {
	if types := r.LayerTypes(layers, "sliding_attention", "full_attention"); types != nil || r.Err() != nil {
		return types
	}
	pattern := r.IntOr("sliding_window_pattern", ggufspec.Gemma3SWAPattern)
	if pattern <= 0 {
		r.Fail(fmt.Errorf("config.json: sliding_window_pattern = %d; want a positive integer", pattern))
		return nil
	}
	return gemma3Pattern(layers, pattern)
}

// gemma3Pattern lists n layers' types when every pattern-th is global.
func gemma3Pattern(n, pattern int) []string {
	types := make([]string, n)
	for i := range types {
		types[i] = "sliding_attention"
		if (i+1)%pattern == 0 {
			types[i] = "full_attention"
		}
	}
	return types
}

// gemma3QueryScalar is the query_pre_attn_scalar llama.cpp's gemma3
// implies: it scales by 1/sqrt(head_dim), except for 62 layers (Gemma 3
// 27B), where it takes hidden/heads.
func gemma3QueryScalar(layers, hidden, heads, headDim int) float64 {
	if layers == 62 {
		return float64(hidden / heads)
	}
	return float64(headDim)
}

func plusOne(vals []float32) ([]float32, error) {
	out := make([]float32, len(vals))
	for i, v := range vals {
		out[i] = 1 + v
	}
	return out, nil
}
