//go:build cgo

package convert_test

import (
	"testing"

	"github.com/udgamlabs/udgam-ci/convert/archtest"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
)

func TestQwen2Exact(t *testing.T) {
	t.Parallel()
	m := converttest.TinyDecoder()
	m.QKVBias = true
	tied := m
	tied.Tied = true
	qwen := map[string]any{"use_sliding_window": false, "sliding_window": 4096, "max_window_layers": 2}
	for i, tt := range []struct {
		name    string
		d       converttest.Decoder
		formats []converttest.Format
	}{
		{"f32", converttest.Decoder{Class: "Qwen2ForCausalLM", ModelType: "qwen2", Model: m, Dtype: "F32", Seed: 5, Extra: qwen}, []converttest.Format{converttest.Safetensors, converttest.ShardedTorch}},
		{"bf16 tied", converttest.Decoder{Class: "Qwen2ForCausalLM", ModelType: "qwen2", Model: tied, Dtype: "BF16", Seed: 6, Extra: qwen}, []converttest.Format{converttest.ShardedSafetensors, converttest.Torch}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, gguf := archtest.Exact(t, decoderCase(tt.d, tt.formats...))
			if i == 0 {
				archtest.Invariance(t, gguf, tt.d.Model.Vocab)
			}
		})
	}
}

func TestQwen3Exact(t *testing.T) {
	t.Parallel()
	m := converttest.TinyDecoder()
	m.QKNorm = true
	m.HeadDim = 32 // q is 128 wide, hidden 64, as Qwen3's head_dim makes it
	tied := m
	tied.Tied = true
	for i, tt := range []struct {
		name    string
		d       converttest.Decoder
		formats []converttest.Format
	}{
		{"f32", converttest.Decoder{Class: "Qwen3ForCausalLM", ModelType: "qwen3", Model: m, Dtype: "F32", Seed: 7, Extra: map[string]any{"attention_bias": false}}, []converttest.Format{converttest.Safetensors, converttest.Torch}},
		{"f16 tied", converttest.Decoder{Class: "Qwen3ForCausalLM", ModelType: "qwen3", Model: tied, Dtype: "F16", Seed: 8}, []converttest.Format{converttest.ShardedSafetensors, converttest.ShardedTorch}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, gguf := archtest.Exact(t, decoderCase(tt.d, tt.formats...))
			if i == 0 {
				archtest.Invariance(t, gguf, tt.d.Model.Vocab)
			}
		})
	}
}
