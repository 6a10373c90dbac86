package convert

import "fmt"

// Olmo2 converts Olmo2ForCausalLM to llama.cpp's olmo2: no norm before
// attention or MLP but an RMSNorm after each (before the residual add),
// RMSNorm over the whole q and k projections, NEOX RoPE (transformers' own
// rotate_half, so q and k keep their order), a final RMSNorm.
var Olmo2 = &Architecture{
	Classes: []string{"Olmo2ForCausalLM"},
	GGUF:    "olmo2",
	Kind:    "transformer",
	Convert: convertOlmo2,
}

func convertOlmo2(cfg Config, w Weights) (KV, []Tensor, error) {
	r := cfg.Reader()
	d := decoder{arch: "olmo2"}
	readOlmo(r, &d)
	d.eps = r.FloatOr("rms_norm_eps", 1e-5) // Olmo2Config's default, not llama's
	// Olmo2Config inherits clip_qkv from OLMo 1 but the model never reads
	// it, so it is not refused. Sliding windows are OLMo 3's.
	r.Refuse("sliding_window")
	r.Refuse("layer_types")
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	e, kvDim := uint64(d.hidden), uint64(d.kvHeads*d.headDim)
	l := &tensorList{w: w, names: merge(decoderNames, sandwichNorms)}
	// llama.cpp's olmo2 requires output.weight even when it is the embedding.
	olmoMatrices(l, &d, true)
	l.take("model.norm.weight", e)
	for i := range d.layers {
		hf := fmt.Sprintf("model.layers.%d.", i)
		l.take(hf+"self_attn.q_norm.weight", e)
		l.take(hf+"self_attn.k_norm.weight", kvDim)
		l.take(hf+"post_attention_layernorm.weight", e)
		l.take(hf+"post_feedforward_layernorm.weight", e)
	}
	if l.err != nil {
		return nil, nil, l.err
	}
	return d.kv(), l.ts, nil
}
