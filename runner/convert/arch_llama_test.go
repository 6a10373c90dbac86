package convert_test

import (
	"testing"

	"github.com/udgamlabs/udgam-ci/runner/convert/archtest"
	"github.com/udgamlabs/udgam-ci/runner/convert/converttest"
)

// decoderCase is an exactness case of a llama-family checkpoint, whose
// reference is testmodel.Decoder's forward pass.
func decoderCase(d converttest.Decoder, formats ...converttest.Format) archtest.Case {
	return archtest.Case{Checkpoint: d.Checkpoint(), Reference: d.Model.Reference, Formats: formats}
}

func TestLlamaExact(t *testing.T) {
	tiny := converttest.TinyDecoder()
	tied := tiny
	tied.Tied, tied.QKVBias, tied.OutBias, tied.MLPBias = true, true, true, true
	wide := tiny // head_dim 24 with 4 heads: q is 96 wide, hidden 64
	wide.HeadDim, wide.KVHeads = 24, 1
	tests := []struct {
		name    string
		d       converttest.Decoder
		formats []converttest.Format
	}{
		{"f32 every format", converttest.Decoder{Class: "LlamaForCausalLM", ModelType: "llama", Model: tiny, Dtype: "F32", Seed: 1}, converttest.Formats},
		{"bf16 tied biases", converttest.Decoder{Class: "LlamaForCausalLM", ModelType: "llama", Model: tied, Dtype: "BF16", Seed: 2}, []converttest.Format{converttest.ShardedSafetensors}},
		{"f16 head_dim", converttest.Decoder{Class: "LlamaForCausalLM", ModelType: "llama", Model: wide, Dtype: "F16", Seed: 3}, []converttest.Format{converttest.Torch}},
		{"mistral", converttest.Decoder{Class: "MistralForCausalLM", ModelType: "mistral", Model: tiny, Dtype: "BF16", Seed: 4,
			Extra: map[string]any{"sliding_window": 4096}}, []converttest.Format{converttest.Safetensors}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, gguf := archtest.Exact(t, decoderCase(tt.d, tt.formats...))
			if i == 0 {
				archtest.Invariance(t, gguf, tt.d.Model.Vocab)
			}
		})
	}
}
