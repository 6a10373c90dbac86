package converttest

import (
	"math"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
)

// Lfm2 is a tiny random Lfm2ForCausalLM checkpoint described by the same
// testmodel.Lfm2 whose forward pass is its reference.
type Lfm2 struct {
	Model testmodel.Lfm2
	Dtype string // F32, F16 or BF16
	Seed  uint64
	// Extra config.json keys, or overrides; nil deletes a key.
	Extra map[string]any
}

// TinyLfm2 has convolution layers before, between and after attention
// layers, and LFM2's kernel of 3.
func TinyLfm2() testmodel.Lfm2 {
	return testmodel.Lfm2{
		Hidden: 64, FFN: 96, Layers: 4, Heads: 4, KVHeads: 2, Vocab: Vocab, Context: 4096,
		ConvLCache: 3, Eps: 1e-5, RopeTheta: 1e6,
		LayerTypes: []string{"conv", "full_attention", "conv", "full_attention"}, Tied: true,
	}
}

// Checkpoint returns the config.json, with LFM2's own key names, and
// random weights.
func (c Lfm2) Checkpoint() Checkpoint {
	m := c.Model
	cfg := map[string]any{
		"architectures":            []string{"Lfm2ForCausalLM"},
		"model_type":               "lfm2",
		"hidden_size":              m.Hidden,
		"block_ff_dim":             m.FFN,
		"intermediate_size":        m.FFN,
		"block_auto_adjust_ff_dim": false,
		"block_multiple_of":        256,
		"block_ffn_dim_multiplier": 1.0,
		"num_hidden_layers":        m.Layers,
		"num_attention_heads":      m.Heads,
		"num_key_value_heads":      m.KVHeads,
		"layer_types":              m.LayerTypes,
		"conv_L_cache":             m.ConvLCache,
		"conv_bias":                false,
		"vocab_size":               m.Vocab,
		"max_position_embeddings":  m.Context,
		"norm_eps":                 m.Eps,
		"rope_theta":               m.RopeTheta,
		"tie_embedding":            m.Tied,
		"bos_token_id":             Vocab - 1,
		"eos_token_id":             Vocab - 1,
		"pad_token_id":             0,
		"torch_dtype":              TorchDtype(c.Dtype),
	}
	override(cfg, c.Extra)
	in := 1 / math.Sqrt(float64(m.Hidden))
	init := Init{NormMean: 1, NormStd: 0.1, Std: 2 * in, Custom: func(name string, shape []uint64) (float64, float64, bool) {
		switch {
		case name == "model.embed_tokens.weight":
			return 0, 0.5, true
		case len(shape) == 3: // the convolution's taps
			return 0, 0.5, true
		}
		return 0, 0, false
	}}
	return Checkpoint{Config: cfg, Dtype: c.Dtype, Tensors: Random(c.Seed, c.Dtype, m.Shapes(), init)}
}
