package converttest

import (
	"maps"
	"math"
	"strings"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
)

// Decoder is a tiny random checkpoint of a llama-family class (llama,
// mistral, qwen2, qwen3) described by the same testmodel.Decoder whose
// forward pass is its reference.
type Decoder struct {
	Class     string // LlamaForCausalLM, Qwen2ForCausalLM, ...
	ModelType string // llama, qwen2, ...
	Model     testmodel.Decoder
	Dtype     string // F32, F16 or BF16
	Seed      uint64
	// Extra config.json keys (or overrides), such as "use_sliding_window".
	Extra map[string]any
}

// TinyDecoder is a decoder with the test tokenizer's vocabulary, small
// enough that its float64 forward pass over 2,048 tokens takes a second.
func TinyDecoder() testmodel.Decoder {
	return testmodel.Decoder{
		Hidden: 64, FFN: 96, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16,
		Vocab: Vocab, Context: 4096, Eps: 1e-5, RopeTheta: 10000,
	}
}

// Checkpoint returns the config.json and random weights.
func (d Decoder) Checkpoint() Checkpoint {
	m := d.Model
	cfg := map[string]any{
		"architectures":           []string{d.Class},
		"model_type":              d.ModelType,
		"hidden_size":             m.Hidden,
		"intermediate_size":       m.FFN,
		"num_hidden_layers":       m.Layers,
		"num_attention_heads":     m.Heads,
		"num_key_value_heads":     m.KVHeads,
		"head_dim":                m.HeadDim,
		"vocab_size":              m.Vocab,
		"max_position_embeddings": m.Context,
		"rms_norm_eps":            m.Eps,
		"rope_theta":              m.RopeTheta,
		"rope_scaling":            nil,
		"hidden_act":              "silu",
		"tie_word_embeddings":     m.Tied,
		"bos_token_id":            Vocab - 1,
		"eos_token_id":            Vocab - 1,
		"torch_dtype":             TorchDtype(d.Dtype),
	}
	if d.ModelType == "llama" || d.ModelType == "mistral" {
		cfg["attention_bias"] = m.QKVBias
		cfg["mlp_bias"] = m.MLPBias
	}
	maps.Copy(cfg, d.Extra)
	// Standard deviations keep activations near unit size, so attention
	// varies between positions and every part of the block counts.
	in := 1 / math.Sqrt(float64(m.Hidden))
	init := Init{NormMean: 1, NormStd: 0.1, Std: in, Custom: func(name string, shape []uint64) (float64, float64, bool) {
		switch {
		case strings.HasSuffix(name, ".bias"):
			return 0, 0.1, true
		case name == "model.embed_tokens.weight":
			return 0, 0.5, true
		case name == "lm_head.weight":
			return 0, 2 * in, true
		case strings.HasSuffix(name, "down_proj.weight"):
			return 0, 1 / math.Sqrt(float64(m.FFN)), true
		}
		return 0, 0, false
	}}
	return Checkpoint{Config: cfg, Dtype: d.Dtype, Tensors: Random(d.Seed, d.Dtype, m.Shapes(), init)}
}

// Values returns each tensor's values by name, as a reference takes them.
func (c Checkpoint) Values() map[string][]float32 {
	out := make(map[string][]float32, len(c.Tensors))
	for n, t := range c.Tensors {
		out[n] = t.Values
	}
	return out
}
