package convert

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Lfm2 is Lfm2ForCausalLM (LFM2 350M, 700M, 1.2B): a hybrid whose layers
// are either attention (with per-head q/k layernorms) or a gated short
// causal convolution, as layer_types (or full_attn_idxs) says, each with a
// SwiGLU feed-forward. The convolution keeps a state per sequence.
var Lfm2 = &Architecture{
	Classes: []string{"Lfm2ForCausalLM"},
	GGUF:    "lfm2",
	Kind:    "hybrid",
	Convert: byShape(readLfm2Config),
}

// lfm2Names are LFM2's tensors: each layer a short convolution or attention.
var lfm2Names = tensorNames{
	"model.embed_tokens.weight": "token_embd.weight",
	// The final norm is Hugging Face's embedding_norm (applied after the
	// last layer). The llama.cpp vendored here looks it up as plain
	// "output_norm", without ".weight".
	"model.embedding_norm.weight":                 "output_norm",
	"model.layers.N.operator_norm.weight":         "blk.N.attn_norm.weight",
	"model.layers.N.ffn_norm.weight":              "blk.N.ffn_norm.weight",
	"model.layers.N.feed_forward.w1.weight":       "blk.N.ffn_gate.weight",
	"model.layers.N.feed_forward.w3.weight":       "blk.N.ffn_up.weight",
	"model.layers.N.feed_forward.w2.weight":       "blk.N.ffn_down.weight",
	"model.layers.N.conv.conv.weight":             "blk.N.shortconv.conv.weight",
	"model.layers.N.conv.in_proj.weight":          "blk.N.shortconv.in_proj.weight",
	"model.layers.N.conv.out_proj.weight":         "blk.N.shortconv.out_proj.weight",
	"model.layers.N.self_attn.q_proj.weight":      "blk.N.attn_q.weight",
	"model.layers.N.self_attn.k_proj.weight":      "blk.N.attn_k.weight",
	"model.layers.N.self_attn.v_proj.weight":      "blk.N.attn_v.weight",
	"model.layers.N.self_attn.out_proj.weight":    "blk.N.attn_output.weight",
	"model.layers.N.self_attn.q_layernorm.weight": "blk.N.attn_q_norm.weight",
	"model.layers.N.self_attn.k_layernorm.weight": "blk.N.attn_k_norm.weight",
}

// lfm2Config is what the converter takes from an LFM2 config.json, read
// with Lfm2Config's defaults and checked against llama.cpp's lfm2 graph.
type lfm2Config struct {
	hidden, layers, heads, kvHeads, headDim, vocab, context, lCache, ffn int
	eps, ropeTheta                                                       float64
	tied                                                                 bool
	types                                                                []string // "conv" or "full_attention", one per layer
}

// readLfm2Config reads config.json; w is asked only for the feed-forward
// width, which the config's own arithmetic must agree with.
func readLfm2Config(cfg Config, w Weights) (lfm2Config, error) {
	r := cfg.Reader()
	c := lfm2Config{
		hidden:  r.Int("hidden_size"),
		layers:  r.Int("num_hidden_layers"),
		heads:   r.Int("num_attention_heads"),
		kvHeads: r.IntOr("num_key_value_heads", 8),
		vocab:   r.Int("vocab_size"),
		context: r.IntOr("max_position_embeddings", 128000),
		eps:     r.FloatOr("norm_eps", 1e-5),
		lCache:  r.IntOr("conv_L_cache", 3),
		// theta wins over rope_theta, and rope_parameters over both.
		ropeTheta: r.FloatOr("theta", r.FloatOr("rope_theta", 1e6)),
		// tie_embedding is LFM2's own name and wins, as in Lfm2Config.
		tied: r.BoolOr("tie_embedding", r.BoolOr("tie_word_embeddings", true)),
	}
	c.ffn = lfm2FeedForward(r)
	c.types = lfm2LayerTypes(r, c.layers)
	// llama.cpp's lfm2 has no convolution biases and no rope scaling.
	r.Refuse("conv_bias", "false")
	r.Refuse("rope_scaling")
	if raw := r.Raw("rope_parameters"); raw != nil {
		if theta, ok := r.PlainRope("rope_parameters", raw); ok {
			c.ropeTheta = theta
		}
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	c.headDim = c.hidden / c.heads
	switch {
	case c.hidden%c.heads != 0:
		return c, fmt.Errorf("config.json: hidden_size %d is not a multiple of num_attention_heads %d", c.hidden, c.heads)
	case cfg.Has("head_dim") && r.IntOr("head_dim", 0) != c.headDim:
		// llama.cpp's lfm2 sizes q and the output by the embedding.
		return c, fmt.Errorf("config.json: head_dim %d is not supported: llama.cpp's lfm2 needs hidden_size / num_attention_heads = %d", r.IntOr("head_dim", 0), c.headDim)
	case c.headDim%2 != 0:
		return c, fmt.Errorf("config.json: head size %d is not even (rope turns pairs)", c.headDim)
	case c.kvHeads <= 0 || c.heads%c.kvHeads != 0:
		return c, fmt.Errorf("config.json: num_key_value_heads %d does not divide num_attention_heads %d", c.kvHeads, c.heads)
	case c.lCache < 2:
		return c, fmt.Errorf("config.json: conv_L_cache = %d; llama.cpp's short convolution needs a kernel of at least 2", c.lCache)
	case c.eps <= 0 || c.ropeTheta <= 0:
		return c, fmt.Errorf("config.json: norm_eps %v, rope_theta %v: want positive values", c.eps, c.ropeTheta)
	}
	// llama.cpp's hybrid memory aborts on a decode when either of its
	// parts (attention cache, convolution state) holds no layer.
	if !slices.Contains(c.types, "conv") || !slices.Contains(c.types, "full_attention") {
		return c, fmt.Errorf("config.json: layer_types %v is not supported: llama.cpp's lfm2 needs both conv and full_attention layers", c.types)
	}
	// The feed-forward size comes from the weights; the config's own
	// arithmetic (block_auto_adjust_ff_dim) must agree with them.
	w1 := w.Shape("model.layers.0.feed_forward.w1.weight")
	if len(w1) != 2 {
		return c, fmt.Errorf("checkpoint has no 2-D tensor model.layers.0.feed_forward.w1.weight")
	}
	if int(w1[0]) != c.ffn {
		return c, fmt.Errorf("feed_forward.w1 has %d rows; config.json's intermediate size works out to %d", w1[0], c.ffn)
	}
	return c, nil
}

func (c lfm2Config) kv() KV {
	kvPerLayer := make([]uint32, c.layers)
	for i, t := range c.types {
		if t == "full_attention" {
			kvPerLayer[i] = uint32(c.kvHeads)
		}
	}
	return KV{
		"lfm2.context_length":                   uint32(c.context),
		"lfm2.embedding_length":                 uint32(c.hidden),
		"lfm2.block_count":                      uint32(c.layers),
		"lfm2.feed_forward_length":              uint32(c.ffn),
		"lfm2.attention.head_count":             uint32(c.heads),
		"lfm2.attention.head_count_kv":          kvPerLayer, // 0 marks a convolution layer
		"lfm2.attention.key_length":             uint32(c.headDim),
		"lfm2.attention.value_length":           uint32(c.headDim),
		"lfm2.attention.layer_norm_rms_epsilon": float32(c.eps),
		"lfm2.rope.freq_base":                   float32(c.ropeTheta),
		"lfm2.rope.dimension_count":             uint32(c.headDim),
		"lfm2.shortconv.l_cache":                uint32(c.lCache),
		"lfm2.vocab_size":                       uint32(c.vocab),
	}
}

func (c lfm2Config) tensors(w Weights) ([]Tensor, error) {
	tk := &Taker{W: w, Names: lfm2Names}
	take := tk.Named
	h, v, ff := uint64(c.hidden), uint64(c.vocab), uint64(c.ffn)
	kvDim, hd := uint64(c.kvHeads*c.headDim), uint64(c.headDim)
	ts := []Tensor{
		take("model.embed_tokens.weight", v, h),
		take("model.embedding_norm.weight", h),
	}
	out, err := outputMatrix(w, c.tied, "lm_head.weight", "model.embed_tokens.weight", v, h)
	if err != nil {
		return nil, err
	}
	if out != nil {
		ts = append(ts, *out)
	}
	for l, typ := range c.types {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts,
			take(p+"operator_norm.weight", h),
			take(p+"ffn_norm.weight", h),
			take(p+"feed_forward.w1.weight", ff, h),
			take(p+"feed_forward.w3.weight", ff, h),
			take(p+"feed_forward.w2.weight", h, ff),
		)
		if typ == "conv" {
			// Conv1d's [hidden, 1, L] squeezed to [hidden, L], float32:
			// ggml's CPU ssm_conv takes no other type.
			conv := take(p+"conv.conv.weight", h, 1, uint64(c.lCache))
			conv.Shape = []uint64{h, uint64(c.lCache)}
			conv.F32 = true
			ts = append(ts, conv,
				take(p+"conv.in_proj.weight", 3*h, h),
				take(p+"conv.out_proj.weight", h, h))
			continue
		}
		// NEOX rope, as Hugging Face's rotate_half: q and k keep their order.
		ts = append(ts,
			take(p+"self_attn.q_proj.weight", h, h),
			take(p+"self_attn.k_proj.weight", kvDim, h),
			take(p+"self_attn.v_proj.weight", kvDim, h),
			take(p+"self_attn.out_proj.weight", h, h),
			take(p+"self_attn.q_layernorm.weight", hd),
			take(p+"self_attn.k_layernorm.weight", hd),
		)
	}
	if err := tk.Err(); err != nil {
		return nil, err
	}
	return ts, nil
}

// lfm2FeedForward is the MLP width as Lfm2MLP computes it: block_ff_dim
// (or intermediate_size), and when block_auto_adjust_ff_dim two thirds of
// it, then, unless block_ffn_dim_multiplier is null, times the multiplier
// and rounded up to a multiple of block_multiple_of.
func lfm2FeedForward(r *ConfigReader) int {
	ff := r.IntOr("block_ff_dim", r.IntOr("intermediate_size", 12288))
	if !r.BoolOr("block_auto_adjust_ff_dim", true) {
		return ff
	}
	ff = 2 * ff / 3
	if raw, ok := r.c.raw["block_ffn_dim_multiplier"]; ok && string(raw) == "null" {
		return ff
	}
	ff = int(r.FloatOr("block_ffn_dim_multiplier", 1.0) * float64(ff))
	m := r.IntOr("block_multiple_of", 256)
	if m <= 0 {
		r.Fail(fmt.Errorf("config.json: block_multiple_of = %d; want a positive integer", m))
		return 0
	}
	return m * ((ff + m - 1) / m)
}

// lfm2LayerTypes reads layer_types, or builds it from full_attn_idxs (all
// layers attend when neither is given), as Lfm2Config does.
func lfm2LayerTypes(r *ConfigReader, layers int) []string {
	if types := r.LayerTypes(layers, "conv", "full_attention"); types != nil || r.Err() != nil {
		return types
	}
	types := make([]string, layers)
	for i := range types {
		types[i] = "full_attention"
	}
	if raw := r.Raw("full_attn_idxs"); raw != nil {
		var idxs []int
		if err := json.Unmarshal(raw, &idxs); err != nil {
			r.Fail(fmt.Errorf("config.json: full_attn_idxs: %w", err))
			return nil
		}
		for i := range types {
			types[i] = "conv"
		}
		for _, i := range idxs {
			if i < 0 || i >= layers {
				r.Fail(fmt.Errorf("config.json: full_attn_idxs holds %d; there are %d layers", i, layers))
				return nil
			}
			types[i] = "full_attention"
		}
	}
	return types
}
