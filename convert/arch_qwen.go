package convert

import (
	"encoding/json"
	"fmt"
)

// Qwen2 is Qwen2ForCausalLM (Qwen2, Qwen2.5): the llama block with biases
// on q, k and v, on llama.cpp's NEOX rope (Hugging Face's rotary layout, so
// no permutation).
var Qwen2 = &Architecture{
	Classes: []string{"Qwen2ForCausalLM"},
	GGUF:    "qwen2",
	Kind:    "transformer",
	Convert: func(cfg Config, w Weights) (KV, []Tensor, error) {
		r := cfg.Reader()
		d := decoder{arch: "qwen2", qkvBias: true}
		d.read(r)
		refuseSlidingWindow(r)
		if err := r.Err(); err != nil {
			return nil, nil, err
		}
		if d.heads*d.headDim != d.hidden {
			// llama.cpp's qwen2 loader sizes q and the output projection
			// by the embedding length.
			return nil, nil, fmt.Errorf("num_attention_heads * head_dim = %d != hidden_size %d is not supported by llama.cpp's qwen2 architecture", d.heads*d.headDim, d.hidden)
		}
		return d.convert(w)
	},
}

// Qwen3 is Qwen3ForCausalLM: no biases, a per-head RMSNorm on q and k
// before rope, and a head size of its own (head_dim, 128 when absent).
var Qwen3 = &Architecture{
	Classes: []string{"Qwen3ForCausalLM"},
	GGUF:    "qwen3",
	Kind:    "transformer",
	Convert: func(cfg Config, w Weights) (KV, []Tensor, error) {
		r := cfg.Reader()
		d := decoder{arch: "qwen3", qkNorm: true}
		d.read(r)
		if r.Err() == nil && !cfg.Has("head_dim") {
			d.headDim = 128 // Qwen3Config's default
		}
		r.Refuse("attention_bias", "false")
		refuseSlidingWindow(r)
		if err := r.Err(); err != nil {
			return nil, nil, err
		}
		return d.convert(w)
	},
}

// refuseSlidingWindow refuses Qwen's sliding-window attention, which the
// converter does not implement; with use_sliding_window false (the
// default) sliding_window and max_window_layers are unused.
func refuseSlidingWindow(r *ConfigReader) {
	r.Refuse("use_sliding_window", "false")
	raw := r.Raw("layer_types")
	if raw == nil {
		return
	}
	var types []string
	if err := json.Unmarshal(raw, &types); err != nil {
		r.Fail(fmt.Errorf("config.json: layer_types: %w", err))
		return
	}
	for i, t := range types {
		if t != "full_attention" {
			r.Fail(fmt.Errorf("config.json: layer_types[%d] is %q; only full_attention layers are supported", i, t))
			return
		}
	}
}
