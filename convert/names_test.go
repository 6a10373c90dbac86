package convert

import (
	"strings"
	"testing"
)

// A checkpoint's tensor gets the name its architecture's table gives,
// its layer number carried over; a tensor the table lacks is an error.
func TestTensorNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		names tensorNames
		hf    string
		want  string // "" for an error
	}{
		{decoderNames, "model.embed_tokens.weight", "token_embd.weight"},
		{decoderNames, "model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight"},
		{decoderNames, "model.layers.17.mlp.down_proj.bias", "blk.17.ffn_down.bias"},
		{decoderNames, "model.layers.3.self_attn.rotary_emb.inv_freq", ""},
		{falconH1Names, "model.layers.2.pre_ff_layernorm.weight", "blk.2.ffn_norm"},
		{falconH1Names, "model.layers.2.mamba.A_log", "blk.2.ssm_a"},
		{mamba2Names, "backbone.layers.11.mixer.conv1d.bias", "blk.11.ssm_conv1d.bias"},
		{mamba2Names, "backbone.layers.1.mamba.A_log", ""}, // Falcon-H1's prefix
		{gpt2Names, "h.0.attn.c_attn.weight", "blk.0.attn_qkv.weight"},
		{gpt2Names.under("transformer."), "transformer.h.11.mlp.c_proj.bias", "blk.11.ffn_down.bias"},
		{gpt2Names.under("transformer."), "h.0.ln_1.weight", ""},
		{merge(decoderNames, sandwichNorms), "model.layers.0.post_attention_layernorm.weight", "blk.0.post_attention_norm.weight"},
		{gemma3Names, "model.layers.0.pre_feedforward_layernorm.weight", "blk.0.ffn_norm.weight"},
	} {
		got, err := tt.names.gguf(tt.hf)
		switch {
		case tt.want == "" && (err == nil || !strings.Contains(err.Error(), tt.hf)):
			t.Errorf("%s: %q, %v; want an error naming it", tt.hf, got, err)
		case tt.want != "" && (err != nil || got != tt.want):
			t.Errorf("%s: %q, %v; want %q", tt.hf, got, err, tt.want)
		}
	}
}

// Every table names each llama.cpp tensor once: two checkpoint tensors
// under one name would write a GGUF llama.cpp refuses, or worse, loads.
func TestTensorNamesOneToOne(t *testing.T) {
	t.Parallel()
	for name, table := range map[string]tensorNames{
		"decoder": decoderNames, "falcon-h1": falconH1Names, "mamba2": mamba2Names, "mamba": mambaNames,
		"gemma3": gemma3Names, "lfm2": lfm2Names, "gpt2": gpt2Names.under("transformer."), "gptneox": gptneoxNames,
		"olmo2": merge(decoderNames, sandwichNorms),
	} {
		seen := map[string]string{}
		for hf, gguf := range table {
			if prev, dup := seen[gguf]; dup {
				t.Errorf("%s: %s and %s are both %s", name, prev, hf, gguf)
			}
			seen[gguf] = hf
			if strings.Contains(hf, ".N.") != strings.Contains(gguf, ".N.") {
				t.Errorf("%s: %s -> %s: a layer's tensor on one side only", name, hf, gguf)
			}
		}
	}
}
