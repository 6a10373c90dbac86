package converttest

import (
	"fmt"
	"maps"
	"math"
	"strings"
)

// FalconH1 describes a tiny FalconH1ForCausalLM: every layer runs attention
// and a Mamba-2 mixer in parallel, then a SwiGLU MLP, with µP multipliers.
type FalconH1 struct {
	Hidden, FFN, Layers, Heads, KVHeads, HeadDim  int
	SSMInner, SSMHeads, SSMHeadDim, State, Groups int  // mamba_d_ssm = SSMHeads * SSMHeadDim
	Kernel                                        int  // mamba_d_conv
	RMSNorm                                       bool // mamba_rms_norm: the gated, grouped norm
	Tied                                          bool
	RopeTheta                                     float64
	// Multipliers are config.json's µP keys (embedding_multiplier, ...,
	// mlp_multipliers, ssm_multipliers), written as given.
	Multipliers map[string]any
	// Extra config.json keys, written as given (options a test wants
	// refused, or the reference model's extra keys).
	Extra map[string]any
	Dtype string // F32, F16 or BF16
	Seed  uint64
	// VocabSize, when set, replaces the test tokenizer's Vocab in the
	// shapes (for a real model's sizes; such a checkpoint is not written).
	VocabSize int
}

func (m FalconH1) vocab() int {
	if m.VocabSize > 0 {
		return m.VocabSize
	}
	return Vocab
}

// SmallFalconH1 exercises every Falcon-H1 option llama.cpp implements:
// grouped-query attention, two SSM groups with the grouped norm, tied
// embeddings with an lm_head multiplier unlike the embedding one, and
// multipliers far from 1 so that one left out shows.
var SmallFalconH1 = FalconH1{
	Hidden: 64, FFN: 96, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16,
	SSMInner: 64, SSMHeads: 8, SSMHeadDim: 8, State: 16, Groups: 2, Kernel: 4,
	RMSNorm: true, Tied: true, RopeTheta: 1e11,
	Multipliers: map[string]any{
		"embedding_multiplier":     3.0,
		"lm_head_multiplier":       0.25,
		"attention_in_multiplier":  0.8,
		"attention_out_multiplier": 1.5,
		"key_multiplier":           0.6,
		"ssm_in_multiplier":        1.25,
		"ssm_out_multiplier":       0.7,
		"mlp_multipliers":          []float64{1.4, 0.6},
		"ssm_multipliers":          []float64{0.9, 1.3, 0.75, 1.2, 0.5},
	},
	Dtype: "BF16", Seed: 7,
}

// Checkpoint returns the model's config and random weights (mamba_d_ssm
// must be SSMHeads * SSMHeadDim; the converter is what checks configs).
func (m FalconH1) Checkpoint() Checkpoint {
	config := map[string]any{
		"architectures":           []string{"FalconH1ForCausalLM"},
		"model_type":              "falcon_h1",
		"vocab_size":              Vocab,
		"hidden_size":             m.Hidden,
		"intermediate_size":       m.FFN,
		"num_hidden_layers":       m.Layers,
		"num_attention_heads":     m.Heads,
		"num_key_value_heads":     m.KVHeads,
		"head_dim":                m.HeadDim,
		"hidden_act":              "silu",
		"rms_norm_eps":            1e-5,
		"max_position_embeddings": 262144,
		"rope_theta":              m.RopeTheta,
		"rope_scaling":            nil,
		"tie_word_embeddings":     m.Tied,
		"attention_bias":          false,
		"attention_dropout":       0.0,
		"mlp_bias":                false,
		"projectors_bias":         false,
		"mamba_d_ssm":             m.SSMInner,
		"mamba_n_heads":           m.SSMHeads,
		"mamba_d_head":            m.SSMHeadDim,
		"mamba_d_state":           m.State,
		"mamba_n_groups":          m.Groups,
		"mamba_d_conv":            m.Kernel,
		"mamba_expand":            2,
		"mamba_chunk_size":        128,
		"mamba_conv_bias":         true,
		"mamba_proj_bias":         false,
		"mamba_rms_norm":          m.RMSNorm,
		"mamba_norm_before_gate":  false,
		"mamba_use_mlp":           true,
		"time_step_min":           0.001,
		"time_step_max":           0.1,
		"initializer_range":       0.02,
		"num_logits_to_keep":      1,
		"use_cache":               true,
		"pad_token_id":            0,
		"eos_token_id":            Vocab - 1,
		"torch_dtype":             TorchDtype(m.Dtype),
	}
	// time_step_limit is left out: its default (0.0, inf) is written by
	// Python as Infinity, which is not JSON.
	for k, v := range m.Multipliers {
		config[k] = v
	}
	maps.Copy(config, m.Extra)
	// The sizes are the struct's whatever Extra says, so that a real
	// model's config converts at tiny scale with all its other options.
	for k, v := range map[string]any{
		"vocab_size": Vocab, "hidden_size": m.Hidden, "intermediate_size": m.FFN,
		"num_hidden_layers": m.Layers, "num_attention_heads": m.Heads, "num_key_value_heads": m.KVHeads,
		"head_dim": m.HeadDim, "mamba_d_ssm": m.SSMInner, "mamba_n_heads": m.SSMHeads,
		"mamba_d_head": m.SSMHeadDim, "mamba_d_state": m.State, "mamba_n_groups": m.Groups,
		"mamba_d_conv": m.Kernel, "mamba_rms_norm": m.RMSNorm, "tie_word_embeddings": m.Tied,
	} {
		config[k] = v
	}
	return Checkpoint{Config: config, Dtype: m.Dtype, NoBOS: true, Tensors: Random(m.Seed, m.Dtype, m.Shapes(), ssmInit)}
}

// Shapes lists the checkpoint's tensors by Hugging Face name, slowest
// dimension first.
func (m FalconH1) Shapes() map[string][]uint64 {
	h := uint64(m.Hidden)
	cd := uint64(m.SSMInner + 2*m.Groups*m.State)
	proj := uint64(m.SSMInner) + cd + uint64(m.SSMHeads)
	shapes := map[string][]uint64{
		"model.embed_tokens.weight":    {uint64(m.vocab()), h},
		"model.final_layernorm.weight": {h},
	}
	if !m.Tied {
		shapes["lm_head.weight"] = []uint64{uint64(m.vocab()), h}
	}
	q, kv := uint64(m.Heads*m.HeadDim), uint64(m.KVHeads*m.HeadDim)
	for l := range m.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		shapes[p+"input_layernorm.weight"] = []uint64{h}
		shapes[p+"pre_ff_layernorm.weight"] = []uint64{h}
		shapes[p+"self_attn.q_proj.weight"] = []uint64{q, h}
		shapes[p+"self_attn.k_proj.weight"] = []uint64{kv, h}
		shapes[p+"self_attn.v_proj.weight"] = []uint64{kv, h}
		shapes[p+"self_attn.o_proj.weight"] = []uint64{h, q}
		shapes[p+"feed_forward.gate_proj.weight"] = []uint64{uint64(m.FFN), h}
		shapes[p+"feed_forward.up_proj.weight"] = []uint64{uint64(m.FFN), h}
		shapes[p+"feed_forward.down_proj.weight"] = []uint64{h, uint64(m.FFN)}
		mixerShapes(shapes, p+"mamba.", h, proj, cd, uint64(m.SSMInner), uint64(m.SSMHeads), uint64(m.Kernel), m.RMSNorm)
	}
	return shapes
}

// Mamba2 describes a tiny Mamba2ForCausalLM.
type Mamba2 struct {
	Hidden, Layers, Heads, HeadDim, State, Groups, Kernel int // Heads*HeadDim = 2*Hidden
	Tied                                                  bool
	Extra                                                 map[string]any
	Dtype                                                 string
	Seed                                                  uint64
}

// SmallMamba2 is a two-layer Mamba-2 with an untied output layer.
var SmallMamba2 = Mamba2{Hidden: 64, Layers: 2, Heads: 8, HeadDim: 16, State: 16, Groups: 1, Kernel: 4, Dtype: "BF16", Seed: 11}

// Checkpoint returns the model's config and random weights.
func (m Mamba2) Checkpoint() Checkpoint {
	inner := 2 * m.Hidden
	config := map[string]any{
		"architectures":            []string{"Mamba2ForCausalLM"},
		"model_type":               "mamba2",
		"vocab_size":               Vocab,
		"hidden_size":              m.Hidden,
		"num_hidden_layers":        m.Layers,
		"expand":                   2,
		"num_heads":                m.Heads,
		"head_dim":                 m.HeadDim,
		"state_size":               m.State,
		"n_groups":                 m.Groups,
		"conv_kernel":              m.Kernel,
		"chunk_size":               256,
		"layer_norm_epsilon":       1e-5,
		"hidden_act":               "silu",
		"use_bias":                 false,
		"use_conv_bias":            true,
		"rms_norm":                 true,
		"residual_in_fp32":         true,
		"time_step_rank":           "auto",
		"time_step_min":            0.001,
		"time_step_max":            0.1,
		"time_step_floor":          1e-4,
		"initializer_range":        0.1,
		"rescale_prenorm_residual": false,
		"tie_word_embeddings":      m.Tied,
		"pad_token_id":             0,
		"bos_token_id":             0,
		"eos_token_id":             Vocab - 1,
		"use_cache":                true,
		"torch_dtype":              TorchDtype(m.Dtype),
	}
	maps.Copy(config, m.Extra)
	h := uint64(m.Hidden)
	cd := uint64(inner + 2*m.Groups*m.State)
	proj := uint64(inner) + cd + uint64(m.Heads)
	shapes := backboneShapes(h, m.Tied)
	for l := range m.Layers {
		p := fmt.Sprintf("backbone.layers.%d.", l)
		shapes[p+"norm.weight"] = []uint64{h}
		mixerShapes(shapes, p+"mixer.", h, proj, cd, uint64(inner), uint64(m.Heads), uint64(m.Kernel), true)
	}
	return Checkpoint{Config: config, Dtype: m.Dtype, NoBOS: true, Tensors: Random(m.Seed, m.Dtype, shapes, ssmInit)}
}

// Mamba describes a tiny MambaForCausalLM (Mamba-1).
type Mamba struct {
	Hidden, Layers, State, Kernel, Rank int // intermediate_size = 2*Hidden
	Tied                                bool
	Extra                               map[string]any
	Dtype                               string
	Seed                                uint64
}

// SmallMamba is a two-layer Mamba-1 with tied embeddings.
var SmallMamba = Mamba{Hidden: 32, Layers: 2, State: 8, Kernel: 4, Rank: 4, Tied: true, Dtype: "BF16", Seed: 13}

// Checkpoint returns the model's config and random weights.
func (m Mamba) Checkpoint() Checkpoint {
	inner := 2 * m.Hidden
	config := map[string]any{
		"architectures":            []string{"MambaForCausalLM"},
		"model_type":               "mamba",
		"vocab_size":               Vocab,
		"hidden_size":              m.Hidden,
		"intermediate_size":        inner,
		"num_hidden_layers":        m.Layers,
		"state_size":               m.State,
		"conv_kernel":              m.Kernel,
		"expand":                   2,
		"time_step_rank":           m.Rank,
		"time_step_scale":          1.0,
		"time_step_min":            0.001,
		"time_step_max":            0.1,
		"time_step_init_scheme":    "random",
		"time_step_floor":          1e-4,
		"layer_norm_epsilon":       1e-5,
		"hidden_act":               "silu",
		"use_bias":                 false,
		"use_conv_bias":            true,
		"residual_in_fp32":         true,
		"initializer_range":        0.1,
		"rescale_prenorm_residual": false,
		"use_mambapy":              false,
		"tie_word_embeddings":      m.Tied,
		"pad_token_id":             0,
		"bos_token_id":             0,
		"eos_token_id":             Vocab - 1,
		"use_cache":                true,
		"torch_dtype":              TorchDtype(m.Dtype),
	}
	maps.Copy(config, m.Extra)
	h, di, ds := uint64(m.Hidden), uint64(inner), uint64(m.State)
	shapes := backboneShapes(h, m.Tied)
	for l := range m.Layers {
		p := fmt.Sprintf("backbone.layers.%d.", l)
		shapes[p+"norm.weight"] = []uint64{h}
		shapes[p+"mixer.in_proj.weight"] = []uint64{2 * di, h}
		shapes[p+"mixer.conv1d.weight"] = []uint64{di, 1, uint64(m.Kernel)}
		shapes[p+"mixer.conv1d.bias"] = []uint64{di}
		shapes[p+"mixer.x_proj.weight"] = []uint64{uint64(m.Rank) + 2*ds, di}
		shapes[p+"mixer.dt_proj.weight"] = []uint64{di, uint64(m.Rank)}
		shapes[p+"mixer.dt_proj.bias"] = []uint64{di}
		shapes[p+"mixer.A_log"] = []uint64{di, ds}
		shapes[p+"mixer.D"] = []uint64{di}
		shapes[p+"mixer.out_proj.weight"] = []uint64{h, di}
	}
	return Checkpoint{Config: config, Dtype: m.Dtype, NoBOS: true, Tensors: Random(m.Seed, m.Dtype, shapes, ssmInit)}
}

// mixerShapes adds one Mamba-2 mixer's tensors under prefix.
// backboneShapes are the tensors around a Mamba-style stack of layers:
// the embedding, the final norm and, unless tied, the output head.
func backboneShapes(hidden uint64, tied bool) map[string][]uint64 {
	shapes := map[string][]uint64{
		"backbone.embeddings.weight": {uint64(Vocab), hidden},
		"backbone.norm_f.weight":     {hidden},
	}
	if !tied {
		shapes["lm_head.weight"] = []uint64{uint64(Vocab), hidden}
	}
	return shapes
}

func mixerShapes(shapes map[string][]uint64, prefix string, hidden, proj, convDim, inner, heads, kernel uint64, norm bool) {
	shapes[prefix+"in_proj.weight"] = []uint64{proj, hidden}
	shapes[prefix+"conv1d.weight"] = []uint64{convDim, 1, kernel}
	shapes[prefix+"conv1d.bias"] = []uint64{convDim}
	shapes[prefix+"dt_bias"] = []uint64{heads}
	shapes[prefix+"A_log"] = []uint64{heads}
	shapes[prefix+"D"] = []uint64{heads}
	if norm {
		shapes[prefix+"norm.weight"] = []uint64{inner}
	}
	shapes[prefix+"out_proj.weight"] = []uint64{hidden, inner}
}

// ssmInit draws values a trained state-space model could hold: A = -exp(A_log)
// around -4 (Mamba initialises it in -16..-1) and dt = softplus(dt bias)
// around 0.01 (0.001..0.1), so that the scan's states neither vanish nor
// explode over 2,048 tokens; D near 1; matrices keep activations near
// unit size.
var ssmInit = Init{NormMean: 1, NormStd: 0.1, Std: 0.15, Custom: func(name string, shape []uint64) (float64, float64, bool) {
	switch {
	case strings.HasSuffix(name, "A_log"):
		return math.Log(4), 0.6, true
	case strings.HasSuffix(name, "dt_bias"), strings.HasSuffix(name, "dt_proj.bias"):
		return -4.6, 1, true // softplus(-4.6) = 0.01
	case strings.HasSuffix(name, ".D"):
		return 1, 0.3, true
	case strings.HasSuffix(name, "conv1d.weight"):
		return 0, 0.4, true
	case strings.HasSuffix(name, "conv1d.bias"):
		return 0, 0.1, true
	}
	return 0, 0, false
}}
