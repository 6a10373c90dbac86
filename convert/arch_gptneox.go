package convert

import "fmt"

// GPTNeoX converts GPTNeoXForCausalLM (the Pythia suite) to llama.cpp's
// gptneox: NEOX RoPE over the first rotary_pct of each head, parallel or
// sequential residual, LayerNorms with biases, a fused q|k|v projection and
// a separate output matrix (embed_out).
var GPTNeoX = &Architecture{
	Classes: []string{"GPTNeoXForCausalLM"},
	GGUF:    "gptneox",
	Kind:    "transformer",
	Convert: convertGPTNeoX,
}

// gptneoxNames are GPT-NeoX's (Pythia's) tensors.
var gptneoxNames = tensorNames{
	"gpt_neox.embed_in.weight":                           "token_embd.weight",
	"gpt_neox.final_layer_norm.weight":                   "output_norm.weight",
	"gpt_neox.final_layer_norm.bias":                     "output_norm.bias",
	"gpt_neox.layers.N.input_layernorm.weight":           "blk.N.attn_norm.weight",
	"gpt_neox.layers.N.input_layernorm.bias":             "blk.N.attn_norm.bias",
	"gpt_neox.layers.N.attention.query_key_value.weight": "blk.N.attn_qkv.weight",
	"gpt_neox.layers.N.attention.query_key_value.bias":   "blk.N.attn_qkv.bias",
	"gpt_neox.layers.N.attention.dense.weight":           "blk.N.attn_output.weight",
	"gpt_neox.layers.N.attention.dense.bias":             "blk.N.attn_output.bias",
	"gpt_neox.layers.N.post_attention_layernorm.weight":  "blk.N.ffn_norm.weight",
	"gpt_neox.layers.N.post_attention_layernorm.bias":    "blk.N.ffn_norm.bias",
	"gpt_neox.layers.N.mlp.dense_h_to_4h.weight":         "blk.N.ffn_up.weight",
	"gpt_neox.layers.N.mlp.dense_h_to_4h.bias":           "blk.N.ffn_up.bias",
	"gpt_neox.layers.N.mlp.dense_4h_to_h.weight":         "blk.N.ffn_down.weight",
	"gpt_neox.layers.N.mlp.dense_4h_to_h.bias":           "blk.N.ffn_down.bias",
}

func convertGPTNeoX(cfg Config, w Weights) (KV, []Tensor, error) {
	r := cfg.Reader()
	hidden, heads, layers := r.Int("hidden_size"), r.Int("num_attention_heads"), r.Int("num_hidden_layers")
	vocab, ff, ctx := r.Int("vocab_size"), r.Int("intermediate_size"), r.Int("max_position_embeddings")
	// transformers has named these two ways.
	pct, pctKey := oneOf(r, 0.25, "rotary_pct", "partial_rotary_factor")
	base, baseKey := oneOf(r, 10000, "rotary_emb_base", "rope_theta")
	// transformers 5 saves both inside rope_parameters.
	rp := readRopeParameters(r, true)
	pct = ropeOverride(r, "partial_rotary_factor", rp.partial, pctKey, pct)
	base = ropeOverride(r, "rope_theta", rp.theta, baseKey, base)
	eps := r.FloatOr("layer_norm_eps", 1e-5)
	parallel := r.BoolOr("use_parallel_residual", true)
	tied := r.BoolOr("tie_word_embeddings", false)
	r.Refuse("hidden_act", `"gelu"`)
	r.Refuse("attention_bias", "true")
	r.Refuse("rope_scaling")
	r.Refuse("num_key_value_heads")
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	if hidden%heads != 0 {
		return nil, nil, fmt.Errorf("config.json: hidden_size %d is not a multiple of num_attention_heads %d", hidden, heads)
	}
	hd := hidden / heads
	// transformers truncates as int() does.
	rot := int(float64(hd) * pct)
	if pct <= 0 || pct > 1 || rot%2 != 0 || rot == 0 {
		return nil, nil, fmt.Errorf("config.json: rotary_pct %v turns %d of %d dimensions per head; want an even number above 0", pct, rot, hd)
	}

	e, v, f := uint64(hidden), uint64(vocab), uint64(ff)
	l := &tensorList{w: w, names: gptneoxNames}
	l.take("gpt_neox.embed_in.weight", v, e)
	l.take("gpt_neox.final_layer_norm.weight", e)
	l.take("gpt_neox.final_layer_norm.bias", e)
	l.output(tied, true, "embed_out.weight", "gpt_neox.embed_in.weight", v, e)
	for i := range layers {
		hf := fmt.Sprintf("gpt_neox.layers.%d.", i)
		l.take(hf+"input_layernorm.weight", e)
		l.take(hf+"input_layernorm.bias", e)
		// transformers' rows run head by head, q|k|v within each head;
		// llama.cpp's views take all of q, then all of k, then all of v.
		l.add(hf+"attention.query_key_value.weight", []uint64{3 * e, e}, headsToBlocks(heads, hd, hidden))
		l.add(hf+"attention.query_key_value.bias", []uint64{3 * e}, headsToBlocks(heads, hd, 1))
		l.take(hf+"attention.dense.weight", e, e)
		l.take(hf+"attention.dense.bias", e)
		l.take(hf+"post_attention_layernorm.weight", e)
		l.take(hf+"post_attention_layernorm.bias", e)
		l.take(hf+"mlp.dense_h_to_4h.weight", f, e)
		l.take(hf+"mlp.dense_h_to_4h.bias", f)
		l.take(hf+"mlp.dense_4h_to_h.weight", e, f)
		l.take(hf+"mlp.dense_4h_to_h.bias", e)
	}
	if l.err != nil {
		return nil, nil, l.err
	}
	kv := KV{
		"general.architecture":                 "gptneox",
		"gptneox.context_length":               uint32(ctx),
		"gptneox.embedding_length":             uint32(hidden),
		"gptneox.feed_forward_length":          uint32(ff),
		"gptneox.block_count":                  uint32(layers),
		"gptneox.attention.head_count":         uint32(heads),
		"gptneox.attention.layer_norm_epsilon": float32(eps),
		"gptneox.rope.dimension_count":         uint32(rot),
		"gptneox.rope.freq_base":               float32(base),
		"gptneox.use_parallel_residual":        parallel,
	}
	return kv, l.ts, nil
}

// oneOf reads a number that config.json may name by any of keys; two
// names set to different values are an error.
func oneOf(r *ConfigReader, def float64, keys ...string) (float64, string) {
	v, from := def, ""
	for _, k := range keys {
		if r.c.Has(k) {
			x := r.FloatOr(k, def)
			if from != "" && x != v {
				r.Fail(fmt.Errorf("config.json: %s = %v but %s = %v", from, v, k, x))
			}
			v, from = x, k
		}
	}
	return v, from
}

// headsToBlocks reorders rows grouped [head][q|k|v][hd] into
// [q|k|v][head][hd]; each row has cols values.
func headsToBlocks(heads, hd, cols int) func([]float32) ([]float32, error) {
	return func(v []float32) ([]float32, error) {
		out := make([]float32, len(v))
		row := hd * cols
		for h := range heads {
			for part := range 3 {
				src := v[(h*3+part)*row:][:row]
				copy(out[(part*heads+h)*row:], src)
			}
		}
		return out, nil
	}
}
