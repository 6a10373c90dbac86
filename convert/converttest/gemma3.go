package converttest

import (
	"math"
	"strings"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
)

// Gemma3 is a tiny random Gemma3ForCausalLM checkpoint described by the
// same testmodel.Gemma3 whose forward pass is its reference.
type Gemma3 struct {
	Model testmodel.Gemma3
	Dtype string // F32, F16 or BF16
	Seed  uint64
	// Extra config.json keys, or overrides; nil deletes a key.
	Extra map[string]any
}

// TinyGemma3 has Gemma 3 270M's options at a small size: head_dim apart
// from hidden/heads, six layers so that llama.cpp's fixed pattern (five
// sliding-window layers, then a global one) holds both kinds, a window of
// 64 (far shorter than a 2,048-token sequence), tied embeddings.
func TinyGemma3() testmodel.Gemma3 {
	return testmodel.Gemma3{
		Hidden: 64, FFN: 128, Layers: 6, Heads: 4, KVHeads: 2, HeadDim: 32, Vocab: Vocab, Context: 4096,
		Eps: 1e-6, RopeTheta: 1e6, RopeLocalTheta: 1e4, QueryPreAttnScalar: 32, SlidingWindow: 64,
		LayerTypes: Gemma3LayerTypes(6), Tied: true,
	}
}

// Gemma3LayerTypes is Gemma 3's pattern: every sixth layer attends globally.
func Gemma3LayerTypes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "sliding_attention"
		if (i+1)%6 == 0 {
			out[i] = "full_attention"
		}
	}
	return out
}

// Checkpoint returns the config.json and random weights.
func (g Gemma3) Checkpoint() Checkpoint {
	m := g.Model
	var softcap any
	if m.FinalLogitSoftcap > 0 {
		softcap = m.FinalLogitSoftcap
	}
	cfg := map[string]any{
		"architectures":               []string{"Gemma3ForCausalLM"},
		"model_type":                  "gemma3_text",
		"hidden_size":                 m.Hidden,
		"intermediate_size":           m.FFN,
		"num_hidden_layers":           m.Layers,
		"num_attention_heads":         m.Heads,
		"num_key_value_heads":         m.KVHeads,
		"head_dim":                    m.HeadDim,
		"vocab_size":                  m.Vocab,
		"max_position_embeddings":     m.Context,
		"rms_norm_eps":                m.Eps,
		"rope_theta":                  m.RopeTheta,
		"rope_local_base_freq":        m.RopeLocalTheta,
		"rope_scaling":                nil,
		"sliding_window":              m.SlidingWindow,
		"layer_types":                 m.LayerTypes,
		"query_pre_attn_scalar":       m.QueryPreAttnScalar,
		"hidden_activation":           "gelu_pytorch_tanh",
		"attn_logit_softcapping":      nil,
		"final_logit_softcapping":     softcap,
		"attention_bias":              false,
		"attention_dropout":           0.0,
		"use_bidirectional_attention": false,
		"tie_word_embeddings":         m.Tied,
		"bos_token_id":                Vocab - 1,
		"eos_token_id":                Vocab - 1,
		"pad_token_id":                0,
		"torch_dtype":                 TorchDtype(g.Dtype),
	}
	override(cfg, g.Extra)
	// Gemma's norms scale by (1 + w), so their weights sit around 0.
	in := 1 / math.Sqrt(float64(m.Hidden))
	init := Init{NormMean: 0, NormStd: 0.2, Std: 2 * in, Custom: func(name string, shape []uint64) (float64, float64, bool) {
		switch {
		case name == "model.embed_tokens.weight":
			return 0, 0.5, true
		case strings.HasSuffix(name, "down_proj.weight"):
			return 0, 2 / math.Sqrt(float64(m.FFN)), true
		}
		return 0, 0, false
	}}
	return Checkpoint{Config: cfg, Dtype: g.Dtype, Tensors: Random(g.Seed, g.Dtype, m.Shapes(), init)}
}

// override applies a test's changes to a config: nil deletes a key.
func override(cfg, changes map[string]any) {
	for k, v := range changes {
		if v == nil {
			delete(cfg, k)
			continue
		}
		cfg[k] = v
	}
}
