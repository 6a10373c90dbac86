package convert

import "fmt"

// Olmo converts OlmoForCausalLM (OLMo 1) to llama.cpp's olmo: llama's
// blocks with LayerNorms that have no parameters (transformers fixes their
// eps at 1e-5), and q, k and v clamped to clip_qkv when it is set.
var Olmo = &Architecture{
	Classes: []string{"OlmoForCausalLM"},
	GGUF:    "olmo",
	Kind:    "transformer",
	Convert: convertOlmo,
}

// olmoLayerNormEps is OlmoLayerNorm's eps, which no config key changes.
const olmoLayerNormEps = 1e-5

func convertOlmo(cfg Config, w Weights) (KV, []Tensor, error) {
	r := cfg.Reader()
	// llama.cpp's olmo turns (2i, 2i+1) pairs: q and k are permuted.
	d := decoder{arch: "olmo", permuteQK: true}
	readOlmo(r, &d)
	clip := r.FloatOr("clip_qkv", 0)
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	if cfg.Has("clip_qkv") && clip <= 0 {
		return nil, nil, fmt.Errorf("config.json: clip_qkv = %v; want a positive bound or null", clip)
	}
	l := &tensorList{w: w, names: decoderNames}
	olmoMatrices(l, &d, false)
	if l.err != nil {
		return nil, nil, l.err
	}
	kv := d.kv()
	delete(kv, "olmo.attention.layer_norm_rms_epsilon")
	kv["olmo.attention.layer_norm_epsilon"] = float32(olmoLayerNormEps)
	if clip > 0 {
		// The same clamp of q, k and v, before RoPE, as transformers'.
		kv["olmo.attention.clamp_kqv"] = float32(clip)
	}
	return kv, l.ts, nil
}

// readOlmo reads what OLMo 1 and 2 configs share (llama's fields) and
// refuses what their llama.cpp architectures do not implement.
func readOlmo(r *ConfigReader, d *decoder) {
	d.read(r) // rope_parameters too, as transformers 5 saves them
	r.Refuse("attention_bias", "false")
	if r.Err() == nil && d.heads*d.headDim != d.hidden {
		// llama.cpp sizes q and the output projection by the embedding.
		r.Fail(fmt.Errorf("config.json: num_attention_heads * head_dim = %d != hidden_size %d is not supported by llama.cpp's %s", d.heads*d.headDim, d.hidden, d.arch))
	}
}

// olmoMatrices adds the embedding, the output matrix and each layer's
// attention and MLP matrices, which OLMo 1 and 2 name alike.
func olmoMatrices(l *tensorList, d *decoder, outputRequired bool) {
	e, v, f := uint64(d.hidden), uint64(d.vocab), uint64(d.ffn)
	kv := uint64(d.kvHeads * d.headDim)
	l.take("model.embed_tokens.weight", v, e)
	l.output(d.tied, outputRequired, "lm_head.weight", "model.embed_tokens.weight", v, e)
	for i := range d.layers {
		hf := fmt.Sprintf("model.layers.%d.", i)
		l.take(hf+"self_attn.q_proj.weight", e, e)
		l.take(hf+"self_attn.k_proj.weight", kv, e)
		if d.permuteQK && l.err == nil {
			n := len(l.ts)
			l.ts[n-2], l.ts[n-1] = d.permuteRoPE(l.ts[n-2], d.heads), d.permuteRoPE(l.ts[n-1], d.kvHeads)
		}
		l.take(hf+"self_attn.v_proj.weight", kv, e)
		l.take(hf+"self_attn.o_proj.weight", e, e)
		l.take(hf+"mlp.gate_proj.weight", f, e)
		l.take(hf+"mlp.up_proj.weight", f, e)
		l.take(hf+"mlp.down_proj.weight", e, f)
	}
}
