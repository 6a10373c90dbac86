package convert

import (
	"fmt"
	"slices"
)

// Llama covers LlamaForCausalLM and the configurations built on it
// (SmolLM2, TinyLlama, MobileLLM) and MistralForCausalLM: pre-norm blocks
// of RMSNorm, rotary attention with grouped KV heads, and a SwiGLU MLP.
var Llama = &Architecture{
	Classes: []string{"LlamaForCausalLM", "MistralForCausalLM"},
	GGUF:    "llama",
	Kind:    "transformer",
	Convert: convertLlama,
}

func convertLlama(cfg Config, w Weights) (KV, []Tensor, error) {
	r := cfg.Reader()
	d := decoder{arch: "llama", permuteQK: true}
	d.read(r)
	d.qkvBias = r.BoolOr("attention_bias", false)
	d.outBias = d.qkvBias
	d.mlpBias = r.BoolOr("mlp_bias", false)
	// pretraining_tp splits the projections into slices whose results are
	// summed: the same math, whatever its value.
	if cfg.ModelType == "mistral" || slices.Contains(cfg.Classes, "MistralForCausalLM") {
		// Mistral attends over at most sliding_window earlier tokens. The
		// llama graph attends over all of them, which is the same math for
		// sequences no longer than the window, so the window becomes the
		// longest context the GGUF admits.
		if win := r.IntOr("sliding_window", 0); win > 0 && win < d.context {
			d.context = win
		}
	} else {
		r.Refuse("sliding_window")
	}
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	if d.qkvBias && d.heads*d.headDim != d.hidden {
		// llama.cpp's llama loader sizes the q and output biases by the
		// embedding length.
		return nil, nil, fmt.Errorf("attention_bias with num_attention_heads * head_dim = %d != hidden_size %d is not supported by llama.cpp's llama architecture", d.heads*d.headDim, d.hidden)
	}
	return d.convert(w)
}

// decoder is a llama-style decoder-only transformer as llama.cpp's llama,
// qwen2 and qwen3 architectures load it. Its fields are read from
// config.json (read) and set by each architecture.
type decoder struct {
	arch string // GGUF architecture name

	// permuteQK reorders q and k rows for llama.cpp's interleaved rope
	// (LLAMA_ROPE_TYPE_NORM); architectures on NEOX rope take HF's order.
	permuteQK bool
	qkvBias   bool // q_proj, k_proj and v_proj have biases
	outBias   bool // o_proj has a bias
	mlpBias   bool // gate_proj, up_proj and down_proj have biases
	qkNorm    bool // per-head RMSNorm of q and k before rope (Qwen3)

	hidden, ffn, layers, heads, kvHeads, headDim, vocab, context int
	eps, ropeTheta                                               float64
	tied                                                         bool
}

// read takes the fields every such decoder shares, and refuses the options
// that change the math and that the converter does not implement.
func (d *decoder) read(r *ConfigReader) {
	d.hidden = r.Int("hidden_size")
	d.ffn = r.Int("intermediate_size")
	d.layers = r.Int("num_hidden_layers")
	d.heads = r.Int("num_attention_heads")
	d.kvHeads = r.IntOr("num_key_value_heads", d.heads)
	d.vocab = r.Int("vocab_size")
	d.context = r.Int("max_position_embeddings")
	d.eps = r.FloatOr("rms_norm_eps", 1e-6)
	d.ropeTheta = r.FloatOr("rope_theta", 10000)
	d.tied = r.BoolOr("tie_word_embeddings", false)
	if r.Err() != nil {
		return
	}
	d.headDim = r.IntOr("head_dim", d.hidden/d.heads)
	r.Refuse("hidden_act", `"silu"`)
	r.Refuse("rope_scaling")
	d.ropeParameters(r)
	r.Refuse("partial_rotary_factor", "1", "1.0")
	// nanotron's configs (SmolLM2) say whether rope turns adjacent pairs;
	// Hugging Face's modeling code turns (i, i+d/2) whatever it says, and so
	// does the converter: only false means the same model in both.
	r.Refuse("rope_interleaved", "false")
	switch {
	case r.Err() != nil:
	case d.kvHeads <= 0 || d.heads%d.kvHeads != 0:
		r.Fail(fmt.Errorf("config.json: num_key_value_heads %d does not divide num_attention_heads %d", d.kvHeads, d.heads))
	case d.headDim <= 0 || d.headDim%2 != 0:
		r.Fail(fmt.Errorf("config.json: head size %d is not a positive even number (rope turns pairs)", d.headDim))
	case d.eps <= 0:
		r.Fail(fmt.Errorf("config.json: rms_norm_eps %v is not positive", d.eps))
	case d.ropeTheta <= 0:
		r.Fail(fmt.Errorf("config.json: rope_theta %v is not positive", d.ropeTheta))
	}
}

// ropeParameters reads transformers 5's rope_parameters, which replace
// rope_theta and rope_scaling: only the default rope, unscaled.
func (d *decoder) ropeParameters(r *ConfigReader) {
	from := ""
	if r.c.Has("rope_theta") {
		from = "rope_theta"
	}
	d.ropeTheta = ropeOverride(r, "rope_theta", readRopeParameters(r, false).theta, from, d.ropeTheta)
}

func (d *decoder) kv() KV {
	a := d.arch + "."
	kv := KV{
		a + "context_length":                   uint32(d.context),
		a + "embedding_length":                 uint32(d.hidden),
		a + "block_count":                      uint32(d.layers),
		a + "feed_forward_length":              uint32(d.ffn),
		a + "attention.head_count":             uint32(d.heads),
		a + "attention.head_count_kv":          uint32(d.kvHeads),
		a + "attention.layer_norm_rms_epsilon": float32(d.eps),
		a + "attention.key_length":             uint32(d.headDim),
		a + "attention.value_length":           uint32(d.headDim),
		a + "rope.freq_base":                   float32(d.ropeTheta),
		a + "rope.dimension_count":             uint32(d.headDim),
		a + "vocab_size":                       uint32(d.vocab),
	}
	return kv
}

// decoderNames are the llama, qwen2 and qwen3 decoders' tensors.
var decoderNames = tensorNames{
	"model.embed_tokens.weight":                      "token_embd.weight",
	"model.norm.weight":                              "output_norm.weight",
	"model.layers.N.input_layernorm.weight":          "blk.N.attn_norm.weight",
	"model.layers.N.self_attn.q_proj.weight":         "blk.N.attn_q.weight",
	"model.layers.N.self_attn.k_proj.weight":         "blk.N.attn_k.weight",
	"model.layers.N.self_attn.v_proj.weight":         "blk.N.attn_v.weight",
	"model.layers.N.self_attn.o_proj.weight":         "blk.N.attn_output.weight",
	"model.layers.N.self_attn.q_proj.bias":           "blk.N.attn_q.bias",
	"model.layers.N.self_attn.k_proj.bias":           "blk.N.attn_k.bias",
	"model.layers.N.self_attn.v_proj.bias":           "blk.N.attn_v.bias",
	"model.layers.N.self_attn.o_proj.bias":           "blk.N.attn_output.bias",
	"model.layers.N.self_attn.q_norm.weight":         "blk.N.attn_q_norm.weight",
	"model.layers.N.self_attn.k_norm.weight":         "blk.N.attn_k_norm.weight",
	"model.layers.N.post_attention_layernorm.weight": "blk.N.ffn_norm.weight",
	"model.layers.N.mlp.gate_proj.weight":            "blk.N.ffn_gate.weight",
	"model.layers.N.mlp.up_proj.weight":              "blk.N.ffn_up.weight",
	"model.layers.N.mlp.down_proj.weight":            "blk.N.ffn_down.weight",
	"model.layers.N.mlp.gate_proj.bias":              "blk.N.ffn_gate.bias",
	"model.layers.N.mlp.up_proj.bias":                "blk.N.ffn_up.bias",
	"model.layers.N.mlp.down_proj.bias":              "blk.N.ffn_down.bias",
}

// sandwichNorms are the norms after attention and after the MLP that OLMo
// 2 and Gemma 3 put into the decoder (post_attention_layernorm then
// follows attention instead of preceding the MLP).
var sandwichNorms = tensorNames{
	"model.layers.N.post_attention_layernorm.weight":   "blk.N.post_attention_norm.weight",
	"model.layers.N.post_feedforward_layernorm.weight": "blk.N.post_ffw_norm.weight",
}

func (d *decoder) convert(w Weights) (KV, []Tensor, error) {
	var ts []Tensor
	tk := &Taker{W: w, Names: decoderNames}
	take := tk.Named
	h, v, ff := uint64(d.hidden), uint64(d.vocab), uint64(d.ffn)
	q, kvDim, hd := uint64(d.heads*d.headDim), uint64(d.kvHeads*d.headDim), uint64(d.headDim)
	ts = append(ts, take("model.embed_tokens.weight", v, h))
	ts = append(ts, take("model.norm.weight", h))
	out, err := outputMatrix(w, d.tied, "lm_head.weight", "model.embed_tokens.weight", v, h)
	if err != nil {
		return nil, nil, err
	}
	if out != nil {
		ts = append(ts, *out)
	}
	for l := range d.layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		qt := take(p+"self_attn.q_proj.weight", q, h)
		kt := take(p+"self_attn.k_proj.weight", kvDim, h)
		if d.permuteQK {
			qt, kt = d.permuteRoPE(qt, d.heads), d.permuteRoPE(kt, d.kvHeads)
		}
		ts = append(ts,
			take(p+"input_layernorm.weight", h),
			qt, kt,
			take(p+"self_attn.v_proj.weight", kvDim, h),
			take(p+"self_attn.o_proj.weight", h, q),
			take(p+"post_attention_layernorm.weight", h),
			take(p+"mlp.gate_proj.weight", ff, h),
			take(p+"mlp.up_proj.weight", ff, h),
			take(p+"mlp.down_proj.weight", h, ff),
		)
		if d.qkvBias {
			qb := take(p+"self_attn.q_proj.bias", q)
			kb := take(p+"self_attn.k_proj.bias", kvDim)
			if d.permuteQK {
				qb, kb = d.permuteRoPE(qb, d.heads), d.permuteRoPE(kb, d.kvHeads)
			}
			ts = append(ts, qb, kb, take(p+"self_attn.v_proj.bias", kvDim))
		}
		if d.outBias {
			ts = append(ts, take(p+"self_attn.o_proj.bias", h))
		}
		if d.mlpBias {
			ts = append(ts,
				take(p+"mlp.gate_proj.bias", ff),
				take(p+"mlp.up_proj.bias", ff),
				take(p+"mlp.down_proj.bias", h))
		}
		if d.qkNorm {
			ts = append(ts,
				take(p+"self_attn.q_norm.weight", hd),
				take(p+"self_attn.k_norm.weight", hd))
		}
	}
	if err := tk.Err(); err != nil {
		return nil, nil, err
	}
	return d.kv(), ts, nil
}

// permuteRoPE reorders t's rows from Hugging Face's rotary layout, where
// each head turns the pairs (i, i+d/2), to the interleaved one of
// llama.cpp's llama rope, where it turns (2i, 2i+1). Matrices and biases
// alike: rows are the first dimension.
func (d *decoder) permuteRoPE(t Tensor, heads int) Tensor {
	hd := d.headDim
	return t.Map(func(vals []float32) ([]float32, error) {
		rows := heads * hd
		if rows == 0 || len(vals)%rows != 0 {
			return nil, fmt.Errorf("tensor %s: %d values are not %d rows", t.Name, len(vals), rows)
		}
		cols := len(vals) / rows
		out := make([]float32, len(vals))
		for h := range heads {
			for i := range hd / 2 {
				for j := range 2 {
					dst := (h*hd + 2*i + j) * cols
					src := (h*hd + j*hd/2 + i) * cols
					copy(out[dst:dst+cols], vals[src:src+cols])
				}
			}
		}
		return out, nil
	})
}

// outputMatrix returns the output layer as output.weight, or nil when the
// model ties it to the embeddings (llama.cpp then uses token_embd). A tied
// checkpoint that still stores its head must store the embeddings there,
// or the two files would mean different models.
func outputMatrix(w Weights, tied bool, head, embd string, shape ...uint64) (*Tensor, error) {
	if !tied {
		t, err := Take(w, head, "output.weight", shape...)
		if err != nil {
			return nil, fmt.Errorf("%w (and tie_word_embeddings is false)", err)
		}
		return &t, nil
	}
	if w.Shape(head) == nil {
		return nil, nil
	}
	a, err := w.Read(head)
	if err != nil {
		return nil, err
	}
	b, err := w.Read(embd)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(a, b) {
		return nil, fmt.Errorf("tie_word_embeddings is true but %s differs from %s", head, embd)
	}
	return nil, nil
}
