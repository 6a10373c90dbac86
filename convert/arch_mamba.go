package convert

import (
	"encoding/json"
	"fmt"
)

// Mamba is MambaForCausalLM (Mamba-1): pre-norm residual blocks of one
// selective-scan mixer each, llama.cpp's mamba.
var Mamba = &Architecture{
	Classes: []string{"MambaForCausalLM"},
	GGUF:    "mamba",
	Kind:    "recurrent",
	Convert: convertMamba,
}

// mambaNames are Mamba's tensors.
var mambaNames = tensorNames{
	"backbone.embeddings.weight":              "token_embd.weight",
	"backbone.norm_f.weight":                  "output_norm.weight",
	"backbone.layers.N.mixer.conv1d.weight":   "blk.N.ssm_conv1d.weight",
	"backbone.layers.N.norm.weight":           "blk.N.attn_norm.weight",
	"backbone.layers.N.mixer.conv1d.bias":     "blk.N.ssm_conv1d.bias",
	"backbone.layers.N.mixer.in_proj.weight":  "blk.N.ssm_in.weight",
	"backbone.layers.N.mixer.x_proj.weight":   "blk.N.ssm_x.weight",
	"backbone.layers.N.mixer.dt_proj.weight":  "blk.N.ssm_dt.weight",
	"backbone.layers.N.mixer.dt_proj.bias":    "blk.N.ssm_dt.bias",
	"backbone.layers.N.mixer.A_log":           "blk.N.ssm_a",
	"backbone.layers.N.mixer.D":               "blk.N.ssm_d",
	"backbone.layers.N.mixer.out_proj.weight": "blk.N.ssm_out.weight",
}

func convertMamba(cfg Config, w Weights) (KV, []Tensor, error) {
	r := cfg.Reader()
	hidden := r.Int("hidden_size")
	layers := r.Int("num_hidden_layers")
	vocab := r.Int("vocab_size")
	state := r.IntOr("state_size", 16)
	kernel := r.IntOr("conv_kernel", 4)
	expand := r.IntOr("expand", 2)
	inner := r.IntOr("intermediate_size", expand*hidden)
	eps := r.FloatOr("layer_norm_epsilon", 1e-5)
	tied := r.BoolOr("tie_word_embeddings", true)
	convBias := r.BoolOr("use_conv_bias", true)
	r.Refuse("use_bias", "false") // llama.cpp's mamba has no in_proj or out_proj bias
	r.Refuse("hidden_act", `"silu"`, `"swish"`)
	r.Refuse("quantization_config")
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	rank := (hidden + 15) / 16 // "auto": ceil(hidden_size / 16)
	if raw := r.Raw("time_step_rank"); raw != nil && string(raw) != `"auto"` {
		if err := json.Unmarshal(raw, &rank); err != nil || rank <= 0 {
			return nil, nil, fmt.Errorf("config.json: time_step_rank = %s; want a positive integer or \"auto\"", raw)
		}
	}
	// llama.cpp's mamba loader takes only an inner size of twice the
	// embedding length.
	if inner != 2*hidden {
		return nil, nil, fmt.Errorf("config.json: intermediate_size %d is not 2 * hidden_size %d; llama.cpp's mamba takes only expand = 2", inner, hidden)
	}
	if kernel < 2 || state < 1 {
		return nil, nil, fmt.Errorf("config.json: conv_kernel %d (llama.cpp needs at least 2) or state_size %d", kernel, state)
	}

	tk := &Taker{W: w, Names: mambaNames}
	take := tk.Named
	h, v, di, ds := uint64(hidden), uint64(vocab), uint64(inner), uint64(state)
	f32 := func(t Tensor) Tensor { t.F32 = true; return t }
	ts := []Tensor{
		take("backbone.embeddings.weight", v, h),
		f32(take("backbone.norm_f.weight", h)),
	}
	out, oerr := outputMatrix(w, tied, "lm_head.weight", "backbone.embeddings.weight", v, h)
	if oerr != nil {
		return nil, nil, oerr
	}
	if out != nil {
		ts = append(ts, *out)
	}
	for l := range layers {
		n, p := fmt.Sprintf("backbone.layers.%d.", l), fmt.Sprintf("backbone.layers.%d.mixer.", l)
		conv := take(p+"conv1d.weight", di, 1, uint64(kernel))
		conv.Shape = []uint64{di, uint64(kernel)} // squeeze the depthwise axis
		bias := tk.Zeros(p+"conv1d.bias", di)     // llama.cpp adds one whatever the checkpoint has
		if convBias {
			bias = take(p+"conv1d.bias", di)
		}
		ts = append(ts,
			f32(take(n+"norm.weight", h)),
			take(p+"in_proj.weight", 2*di, h),
			f32(conv), f32(bias),
			take(p+"x_proj.weight", uint64(rank)+2*ds, di),
			take(p+"dt_proj.weight", di, uint64(rank)),
			f32(take(p+"dt_proj.bias", di)),
			f32(take(p+"A_log", di, ds).Map(negExp)),
			f32(take(p+"D", di)),
			take(p+"out_proj.weight", h, di),
		)
	}
	if err := tk.Err(); err != nil {
		return nil, nil, err
	}
	return KV{
		"mamba.vocab_size":                       uint32(vocab),
		"mamba.context_length":                   uint32(1 << 20), // no positions: any length
		"mamba.embedding_length":                 uint32(hidden),
		"mamba.block_count":                      uint32(layers),
		"mamba.feed_forward_length":              uint32(0),
		"mamba.attention.head_count":             uint32(0),
		"mamba.attention.layer_norm_rms_epsilon": float32(eps),
		"mamba.ssm.conv_kernel":                  uint32(kernel),
		"mamba.ssm.inner_size":                   uint32(inner),
		"mamba.ssm.state_size":                   uint32(state),
		"mamba.ssm.time_step_rank":               uint32(rank),
		"mamba.ssm.dt_b_c_rms":                   false,
	}, ts, nil
}
