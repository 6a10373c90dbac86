package converttest

import (
	"fmt"
	"math"
	"strings"
)

// GPT2 describes a tiny GPT2LMHeadModel as nanoGPT and llm.c export it:
// learned positions, LayerNorms with biases, Conv1D weights ([in][out]),
// gelu_new and, unless Untied, an lm_head tied to the embeddings.
type GPT2 struct {
	Embd, Heads, Layers, Positions int
	Dtype                          string // F32, F16 or BF16
	Seed                           uint64
	Untied                         bool // write lm_head.weight and tie_word_embeddings false
	// Bare leaves out the "transformer." prefix of the tensor names, as
	// the original OpenAI checkpoints do, and writes the causal-mask
	// buffers (h.N.attn.bias, h.N.attn.masked_bias) they carry.
	Bare bool
}

// Write writes the checkpoint into dir as model.safetensors and returns
// its tensors by HF name.
func (m GPT2) Write(dir string) (map[string]Tensor, error) {
	c := m.Checkpoint()
	return c.Tensors, c.Write(dir, Safetensors)
}

// Config is the checkpoint's config.json.
func (m GPT2) Config() map[string]any {
	return map[string]any{
		"architectures":       []string{"GPT2LMHeadModel"},
		"model_type":          "gpt2",
		"vocab_size":          Vocab,
		"n_embd":              m.Embd,
		"n_head":              m.Heads,
		"n_layer":             m.Layers,
		"n_positions":         m.Positions,
		"n_ctx":               m.Positions,
		"n_inner":             nil,
		"activation_function": "gelu_new",
		"layer_norm_epsilon":  1e-5,
		"resid_pdrop":         0.1,
		"embd_pdrop":          0.1,
		"attn_pdrop":          0.1,
		"scale_attn_weights":  true,
		"tie_word_embeddings": !m.Untied,
		"bos_token_id":        Vocab - 1,
		"eos_token_id":        Vocab - 1,
		"torch_dtype":         TorchDtype(m.Dtype),
	}
}

// Shapes lists the checkpoint's weights by Hugging Face name (slowest
// dimension first) for a vocabulary of vocab tokens.
func (m GPT2) Shapes(vocab int) map[string][]uint64 {
	inner := 4 * m.Embd
	p := "transformer."
	if m.Bare {
		p = ""
	}
	e, v, f := uint64(m.Embd), uint64(vocab), uint64(inner)
	shapes := map[string][]uint64{
		p + "wte.weight":  {v, e},
		p + "wpe.weight":  {uint64(m.Positions), e},
		p + "ln_f.weight": {e},
		p + "ln_f.bias":   {e},
	}
	if m.Untied {
		shapes["lm_head.weight"] = []uint64{v, e}
	}
	for l := range m.Layers {
		b := fmt.Sprintf("%sh.%d.", p, l)
		for name, s := range map[string][]uint64{
			"ln_1.weight": {e}, "ln_1.bias": {e},
			"attn.c_attn.weight": {e, 3 * e}, "attn.c_attn.bias": {3 * e},
			"attn.c_proj.weight": {e, e}, "attn.c_proj.bias": {e},
			"ln_2.weight": {e}, "ln_2.bias": {e},
			"mlp.c_fc.weight": {e, f}, "mlp.c_fc.bias": {f},
			"mlp.c_proj.weight": {f, e}, "mlp.c_proj.bias": {e},
		} {
			shapes[b+name] = s
		}
	}
	return shapes
}

// Checkpoint returns the model's config and random weights.
func (m GPT2) Checkpoint() Checkpoint {
	shapes := m.Shapes(Vocab)
	// Conv1D stores [in][out]: the fan-in is the first dimension.
	tensors := Random(m.Seed, m.Dtype, shapes, scaledInit(func(shape []uint64) uint64 { return shape[0] }))
	if m.Bare {
		n := uint64(m.Positions)
		for l := range m.Layers {
			mask := Tensor{Name: fmt.Sprintf("h.%d.attn.bias", l), Shape: []uint64{1, 1, n, n}, Values: make([]float32, n*n)}
			for i := range n {
				for j := range i + 1 {
					mask.Values[i*n+j] = 1
				}
			}
			tensors[mask.Name] = mask
			fill := Tensor{Name: fmt.Sprintf("h.%d.attn.masked_bias", l), Shape: []uint64{1}, Values: []float32{-1e4}}
			tensors[fill.Name] = fill
		}
	}
	return Checkpoint{Config: m.Config(), Dtype: m.Dtype, Tensors: tensors}
}

// GPTNeoX describes a tiny GPTNeoXForCausalLM with Pythia's options.
type GPTNeoX struct {
	Hidden, Heads, Layers, Intermediate int
	RotaryPct                           float64 // share of each head that RoPE turns
	Parallel                            bool    // use_parallel_residual
	Act                                 string  // hidden_act; "" is Pythia's "gelu"
	Dtype                               string
	Seed                                uint64
	// Buffers writes what older Pythia checkpoints carry besides weights:
	// each layer's causal mask, its fill value and RoPE's inv_freq.
	Buffers bool
	// VocabSize is config.json's vocab_size and the embeddings' rows (a
	// real tokenizer's size); zero means Vocab.
	VocabSize int
}

func (m GPTNeoX) vocab() int {
	if m.VocabSize > 0 {
		return m.VocabSize
	}
	return Vocab
}

// Write writes the checkpoint into dir as model.safetensors and returns
// its tensors by HF name.
func (m GPTNeoX) Write(dir string) (map[string]Tensor, error) {
	c := m.Checkpoint()
	return c.Tensors, c.Write(dir, Safetensors)
}

// Config is the checkpoint's config.json.
func (m GPTNeoX) Config() map[string]any {
	act := m.Act
	if act == "" {
		act = "gelu"
	}
	return map[string]any{
		"architectures":           []string{"GPTNeoXForCausalLM"},
		"model_type":              "gpt_neox",
		"vocab_size":              m.vocab(),
		"hidden_size":             m.Hidden,
		"num_attention_heads":     m.Heads,
		"num_hidden_layers":       m.Layers,
		"intermediate_size":       m.Intermediate,
		"max_position_embeddings": 2048,
		"rotary_pct":              m.RotaryPct,
		"rotary_emb_base":         10000,
		"layer_norm_eps":          1e-5,
		"use_parallel_residual":   m.Parallel,
		"hidden_act":              act,
		"attention_bias":          true,
		"attention_dropout":       0.0,
		"hidden_dropout":          0.0,
		"classifier_dropout":      0.1,
		"initializer_range":       0.02,
		"use_cache":               true,
		"rope_scaling":            nil,
		"tie_word_embeddings":     false,
		"bos_token_id":            m.vocab() - 1,
		"eos_token_id":            m.vocab() - 1,
		"torch_dtype":             TorchDtype(m.Dtype),
	}
}

// Shapes lists the checkpoint's weights by Hugging Face name (slowest
// dimension first) for a vocabulary of vocab tokens.
func (m GPTNeoX) Shapes(vocab int) map[string][]uint64 {
	e, v, f := uint64(m.Hidden), uint64(vocab), uint64(m.Intermediate)
	shapes := map[string][]uint64{
		"gpt_neox.embed_in.weight":         {v, e},
		"gpt_neox.final_layer_norm.weight": {e},
		"gpt_neox.final_layer_norm.bias":   {e},
		"embed_out.weight":                 {v, e},
	}
	for l := range m.Layers {
		b := fmt.Sprintf("gpt_neox.layers.%d.", l)
		for name, s := range map[string][]uint64{
			"input_layernorm.weight": {e}, "input_layernorm.bias": {e},
			"attention.query_key_value.weight": {3 * e, e}, "attention.query_key_value.bias": {3 * e},
			"attention.dense.weight": {e, e}, "attention.dense.bias": {e},
			"post_attention_layernorm.weight": {e}, "post_attention_layernorm.bias": {e},
			"mlp.dense_h_to_4h.weight": {f, e}, "mlp.dense_h_to_4h.bias": {f},
			"mlp.dense_4h_to_h.weight": {e, f}, "mlp.dense_4h_to_h.bias": {e},
		} {
			shapes[b+name] = s
		}
	}
	return shapes
}

// Checkpoint returns the model's config and random weights.
func (m GPTNeoX) Checkpoint() Checkpoint {
	shapes := m.Shapes(m.vocab())
	tensors := Random(m.Seed, m.Dtype, shapes, scaledInit(linearFanIn))
	if m.Buffers {
		hd := m.Hidden / m.Heads
		rot := int(float64(hd) * m.RotaryPct)
		const n = 64 // older checkpoints hold a max_positions mask; its size is not checked
		for l := range m.Layers {
			b := fmt.Sprintf("gpt_neox.layers.%d.attention.", l)
			mask := Tensor{Name: b + "bias", Shape: []uint64{1, 1, n, n}, Values: make([]float32, n*n)}
			for i := range n {
				for j := range i + 1 {
					mask.Values[i*n+j] = 1
				}
			}
			inv := Tensor{Name: b + "rotary_emb.inv_freq", Shape: []uint64{uint64(rot / 2)}}
			for i := range rot / 2 {
				inv.Values = append(inv.Values, roundTo(m.Dtype, float32(math.Pow(10000, -float64(2*i)/float64(rot)))))
			}
			for _, t := range []Tensor{mask, inv, {Name: b + "masked_bias", Shape: []uint64{1}, Values: []float32{-1e9}}} {
				tensors[t.Name] = t
			}
		}
	}
	return Checkpoint{Config: m.Config(), Dtype: m.Dtype, Tensors: tensors}
}

// Olmo describes a tiny OlmoForCausalLM (Version 1) or Olmo2ForCausalLM
// (Version 2).
type Olmo struct {
	Version                                      int
	Hidden, Intermediate, Heads, KVHeads, Layers int
	ClipQKV                                      float64 // OLMo 1's clip_qkv; 0 writes null
	Tied                                         bool
	Dtype                                        string
	Seed                                         uint64
}

// Write writes the checkpoint into dir as model.safetensors and returns
// its tensors by HF name.
func (m Olmo) Write(dir string) (map[string]Tensor, error) {
	c := m.Checkpoint()
	return c.Tensors, c.Write(dir, Safetensors)
}

// Config is the checkpoint's config.json.
func (m Olmo) Config() map[string]any {
	class, typ := "OlmoForCausalLM", "olmo"
	if m.Version == 2 {
		class, typ = "Olmo2ForCausalLM", "olmo2"
	}
	config := map[string]any{
		"architectures":           []string{class},
		"model_type":              typ,
		"vocab_size":              Vocab,
		"hidden_size":             m.Hidden,
		"intermediate_size":       m.Intermediate,
		"num_attention_heads":     m.Heads,
		"num_key_value_heads":     m.KVHeads,
		"num_hidden_layers":       m.Layers,
		"max_position_embeddings": 4096,
		"hidden_act":              "silu",
		"rope_theta":              10000.0,
		"rope_scaling":            nil,
		"attention_bias":          false,
		"attention_dropout":       0.0,
		"clip_qkv":                nil,
		"tie_word_embeddings":     m.Tied,
		"initializer_range":       0.02,
		"use_cache":               true,
		"pad_token_id":            1,
		"bos_token_id":            nil,
		"eos_token_id":            Vocab - 1,
		"torch_dtype":             TorchDtype(m.Dtype),
	}
	if m.ClipQKV > 0 {
		config["clip_qkv"] = m.ClipQKV
	}
	if m.Version == 2 {
		config["rms_norm_eps"] = 1e-6
	}
	return config
}

// Shapes lists the checkpoint's weights by Hugging Face name (slowest
// dimension first) for a vocabulary of vocab tokens.
func (m Olmo) Shapes(vocab int) map[string][]uint64 {
	e, v, f := uint64(m.Hidden), uint64(vocab), uint64(m.Intermediate)
	kv := e / uint64(m.Heads) * uint64(m.KVHeads)
	shapes := map[string][]uint64{"model.embed_tokens.weight": {v, e}}
	if !m.Tied {
		shapes["lm_head.weight"] = []uint64{v, e}
	}
	if m.Version == 2 {
		shapes["model.norm.weight"] = []uint64{e}
	}
	for l := range m.Layers {
		b := fmt.Sprintf("model.layers.%d.", l)
		for name, s := range map[string][]uint64{
			"self_attn.q_proj.weight": {e, e}, "self_attn.k_proj.weight": {kv, e},
			"self_attn.v_proj.weight": {kv, e}, "self_attn.o_proj.weight": {e, e},
			"mlp.gate_proj.weight": {f, e}, "mlp.up_proj.weight": {f, e}, "mlp.down_proj.weight": {e, f},
		} {
			shapes[b+name] = s
		}
		if m.Version == 2 {
			shapes[b+"self_attn.q_norm.weight"] = []uint64{e}
			shapes[b+"self_attn.k_norm.weight"] = []uint64{kv}
			shapes[b+"post_attention_layernorm.weight"] = []uint64{e}
			shapes[b+"post_feedforward_layernorm.weight"] = []uint64{e}
		}
	}
	return shapes
}

// Checkpoint returns the model's config and random weights.
func (m Olmo) Checkpoint() Checkpoint {
	shapes := m.Shapes(Vocab)
	return Checkpoint{Config: m.Config(), Dtype: m.Dtype, Tensors: Random(m.Seed, m.Dtype, shapes, scaledInit(linearFanIn))}
}

// linearFanIn is torch.nn.Linear's input size: weights are [out][in].
func linearFanIn(shape []uint64) uint64 { return shape[len(shape)-1] }

// scaledInit draws norm weights near 1, biases small, embeddings of
// unit-size rows' worth, and matrices with variance 1/fan-in, so each layer
// keeps activations near unit size and every part of a block moves the
// log-probabilities.
func scaledInit(fanIn func([]uint64) uint64) Init {
	return Init{Custom: func(name string, shape []uint64) (float64, float64, bool) {
		switch {
		case len(shape) == 1 && strings.HasSuffix(name, ".bias"):
			return 0, 0.1, true
		case len(shape) == 1:
			return 1, 0.1, true
		case strings.Contains(name, "wte") || strings.Contains(name, "wpe") || strings.Contains(name, "embed"):
			return 0, 0.3, true
		}
		return 0, 1 / math.Sqrt(float64(fanIn(shape))), true
	}}
}
