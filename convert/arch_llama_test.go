//go:build cgo

package convert_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/archtest"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// decoderCase is an exactness case of a llama-family checkpoint, whose
// reference is testmodel.Decoder's forward pass.
func decoderCase(d converttest.Decoder, formats ...converttest.Format) archtest.Case {
	return archtest.Case{Checkpoint: d.Checkpoint(), Reference: d.Model.Reference, Formats: formats}
}

func TestLlamaExact(t *testing.T) {
	t.Parallel()
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

// Mistral's sliding window becomes the GGUF's context length, so that
// llama.cpp's full attention is the model's math: the engine refuses longer
// sequences, before anything reaches C.
func TestMistralWindowIsTheContext(t *testing.T) {
	t.Parallel()
	d := converttest.Decoder{Class: "MistralForCausalLM", ModelType: "mistral", Model: converttest.TinyDecoder(), Dtype: "BF16", Seed: 4,
		Extra: map[string]any{"sliding_window": 64}}
	dir := t.TempDir()
	if err := d.Checkpoint().Write(dir, converttest.Safetensors); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.gguf")
	if _, err := convert.Dir(dir, out, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	m := llamatest.Load(t, out, llama.Options{Threads: 1, Context: 256})
	if got := m.Info().ContextLength; got != 64 {
		t.Fatalf("context length %d, want the window 64", got)
	}
	llamatest.Score(t, m, llamatest.RandomSequences(1, 1, 64, converttest.Vocab, 0))
	_, err := m.Score(context.Background(), llamatest.RandomSequences(1, 1, 65, converttest.Vocab, 0))
	if err == nil || !strings.Contains(err.Error(), "65 tokens, longer than the model's training context of 64") {
		t.Errorf("65 tokens: %v", err)
	}
}

// At SmolLM2-135M's widths every weight product of a 512-token batch goes
// through scripts/engine/gemm.c (bfloat16 weights through its vdpbf16ps
// kernel where the CPU has AVX512-BF16): float32 weights stay within
// archtest.Tolerance of the float64 reference, and bfloat16 ones, whose
// activations ggml rounds to bfloat16, within the few hundredths of a nat
// that rounding gives (3.1e-2 measured, BENCHMARKS.md issue 31); a kernel
// that paired or rounded wrongly would be off by nats.
func TestLlamaWideWeights(t *testing.T) {
	t.Parallel()
	m := testmodel.Decoder{Hidden: 576, FFN: 1536, Layers: 2, Heads: 9, KVHeads: 3, HeadDim: 64,
		Vocab: converttest.Vocab, Context: 4096, Eps: 1e-5, RopeTheta: 10000}
	c := converttest.Decoder{Class: "LlamaForCausalLM", ModelType: "llama", Model: m, Dtype: "BF16", Seed: 7}.Checkpoint()
	src := t.TempDir()
	if err := c.Write(src, converttest.Safetensors); err != nil {
		t.Fatal(err)
	}
	ref, err := m.Reference(c.Values())
	if err != nil {
		t.Fatal(err)
	}
	const n = 1024
	reqs := llamatest.RandomSequences(5, 1, n, m.Vocab, int32(m.Vocab-1))
	want := llamatest.Score(t, ref, reqs)
	for _, tt := range []struct {
		dtype string
		most  float64
	}{{"f32", archtest.Tolerance}, {"bf16", 0.1}} {
		path := filepath.Join(t.TempDir(), tt.dtype+".gguf")
		if _, err := convert.Dir(src, path, convert.Options{Dtype: tt.dtype}); err != nil {
			t.Fatalf("%s: %v", tt.dtype, err)
		}
		lm := llamatest.Load(t, path, llama.Options{Threads: 1, Context: n, Batch: 512})
		got := llamatest.Score(t, lm, reqs)
		lm.Close()
		d := llamatest.MaxDiff(t, got, want)
		t.Logf("%s weights: %.3g nats at most from the float64 reference over %d tokens", tt.dtype, d, n)
		if d > tt.most {
			t.Errorf("%s weights: %g nats from the float64 reference, at most %g allowed", tt.dtype, d, tt.most)
		}
	}
}
