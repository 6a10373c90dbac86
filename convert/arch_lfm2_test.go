//go:build cgo

package convert_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/archtest"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner/llama"
)

func lfm2Case(c converttest.Lfm2, formats ...converttest.Format) archtest.Case {
	return archtest.Case{Checkpoint: c.Checkpoint(), Reference: c.Model.Reference, Formats: formats}
}

func TestLfm2Exact(t *testing.T) {
	t.Parallel()
	tiny := converttest.TinyLfm2()
	untied := tiny
	untied.Tied = false
	tests := []struct {
		name    string
		c       converttest.Lfm2
		formats []converttest.Format
	}{
		{"f32", converttest.Lfm2{Model: tiny, Dtype: "F32", Seed: 1}, []converttest.Format{converttest.Safetensors, converttest.Torch}},
		{"bf16 untied", converttest.Lfm2{Model: untied, Dtype: "BF16", Seed: 2}, []converttest.Format{converttest.ShardedTorch}},
		{"f16", converttest.Lfm2{Model: tiny, Dtype: "F16", Seed: 3}, []converttest.Format{converttest.ShardedSafetensors}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, gguf := archtest.Exact(t, lfm2Case(tt.c, tt.formats...))
			if i == 0 {
				// Packing must keep each sequence's convolution state.
				invariance(t, gguf)
			}
		})
	}
}

// f16, bf16 and q8_0 files load and score: the convolution stays float32,
// which ggml's CPU ssm_conv requires (it asserts otherwise). Their matrix
// products round activations to the weights' type, so they are bounded on
// average and loosely (measured: 0.0057, 0.047 and 0.18 nats per token).
func TestLfm2OutputDtypes(t *testing.T) {
	t.Parallel()
	d := archtest.OutputDtypes(t, lfm2Case(converttest.Lfm2{Model: converttest.TinyLfm2(), Dtype: "F32", Seed: 4}), "f16", "bf16", "q8_0")
	if d["f16"] > 0.02 || d["bf16"] > 0.15 || d["q8_0"] > 0.5 {
		t.Errorf("mean differences from the reference %v; want at most 0.02 (f16), 0.15 (bf16), 0.5 (q8_0) nats", d)
	}
}

func TestLfm2Layout(t *testing.T) {
	t.Parallel()
	c := converttest.Lfm2{Model: converttest.TinyLfm2(), Dtype: "BF16", Seed: 1}.Checkpoint()
	g := convertTiny(t, c, "bf16")
	if got := g.KV.UintOrArrayValueAsArray("attention.head_count_kv", 99); !slices.Equal(got, []uint32{0, 2, 0, 2}) {
		t.Errorf("head_count_kv %v, want 0 for each convolution layer", got)
	}
	if _, ok := g.Tensors["output.weight"]; ok {
		t.Error("a tied model has output.weight")
	}
	conv := g.Tensors["blk.0.shortconv.conv.weight"]
	if conv.Kind != uint32(ggml.TensorTypeF32) || !slices.Equal(conv.Shape, []uint64{3, 64}) {
		t.Errorf("conv kind %d shape %v; want F32 [3 64] (GGUF order)", conv.Kind, conv.Shape)
	}
	got, err := g.Float32s("blk.0.shortconv.conv.weight")
	if err != nil || !slices.Equal(got, c.Tensors["model.layers.0.conv.conv.weight"].Values) {
		t.Errorf("conv weights changed on the way (%v)", err)
	}
	if k := g.Tensors["blk.0.shortconv.in_proj.weight"].Kind; k != uint32(ggml.TensorTypeBF16) {
		t.Errorf("in_proj kind %d, want BF16", k)
	}
}

func TestLfm2Refuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		extra map[string]any
		want  string
	}{
		{"conv bias", map[string]any{"conv_bias": true}, "conv_bias = true"},
		{"rope scaling", map[string]any{"rope_parameters": map[string]any{"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6}}, "rope_parameters.factor = 4"},
		{"head_dim", map[string]any{"head_dim": 32}, "head_dim 32"},
		{"kernel of one", map[string]any{"conv_L_cache": 1}, "conv_L_cache = 1;"},
		// llama.cpp's hybrid memory aborts when one of its parts is empty.
		{"no convolution", map[string]any{"layer_types": []string{"full_attention", "full_attention", "full_attention", "full_attention"}}, "layer_types [full_attention"},
		{"no attention", map[string]any{"layer_types": nil, "full_attn_idxs": []int{}}, "layer_types [conv conv"},
		{"width", map[string]any{"block_auto_adjust_ff_dim": true}, "intermediate size works out to 256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := converttest.Lfm2{Model: converttest.TinyLfm2(), Dtype: "BF16", Seed: 1, Extra: tt.extra}
			if err := c.Checkpoint().Write(dir, converttest.Safetensors); err != nil {
				t.Fatal(err)
			}
			_, err := convert.Dir(dir, filepath.Join(t.TempDir(), "m.gguf"), convert.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

// A GGUF on which llama.cpp would abort (an lfm2 whose layers are all
// convolution, cut down from a converted one) is refused in Go at load.
func TestLfm2UnloadableIsAGoError(t *testing.T) {
	t.Parallel()
	m := converttest.TinyLfm2()
	m.Layers, m.LayerTypes = 2, []string{"conv", "full_attention"}
	g := convertTiny(t, converttest.Lfm2{Model: m, Dtype: "BF16", Seed: 1}.Checkpoint(), "f32")
	var drop []string
	for name := range g.Tensors {
		if strings.HasPrefix(name, "blk.1.") {
			drop = append(drop, name)
		}
	}
	bad := filepath.Join(t.TempDir(), "conv-only.gguf")
	if err := g.Rewrite(bad, func(kv ggml.KV) {
		kv["lfm2.block_count"] = uint32(1)
		kv["lfm2.attention.head_count_kv"] = []uint32{0}
	}, drop...); err != nil {
		t.Fatal(err)
	}
	if _, err := llama.Load(bad, llama.Options{Threads: 1}); err == nil || !strings.Contains(err.Error(), "all shortconv") {
		t.Errorf("load: %v", err)
	}
}

// LFM2-350M's config.json (testdata/configs/lfm2-350m.json; testdata/README.md
// says where it comes from) with its full-size tensor shapes: the MLP width
// its config works out to (4,608 from block_ff_dim 6,656), the layer pattern
// from full_attn_idxs, and 354,483,968 parameters, the model card's count
// (by hand: 67,108,864 in the embedding, 14,157,824 per layer in the MLP and
// norms, 3,145,856 per attention layer, 4,197,376 per convolution layer,
// 1,024 in the last norm).
func TestLfm2_350MConfig(t *testing.T) {
	t.Parallel()
	raw := readRefConfig(t, "lfm2-350m.json")
	b, _ := json.Marshal(raw)
	cfg, err := convert.ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	// The published layer pattern (attention at 2, 5, 8, 10, 12 and 14),
	// which this config states as full_attn_idxs.
	var types []string
	for i := range 16 {
		t := "conv"
		if slices.Contains([]int{2, 5, 8, 10, 12, 14}, i) {
			t = "full_attention"
		}
		types = append(types, t)
	}
	full := testmodel.Lfm2{Hidden: 1024, FFN: 4608, Layers: 16, Heads: 16, KVHeads: 8, Vocab: 65536, ConvLCache: 3, LayerTypes: types, Tied: true}
	kv, ts, err := convert.Lfm2.Convert(cfg, shapesOnly(full.Shapes()))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"lfm2.embedding_length": uint32(1024), "lfm2.block_count": uint32(16), "lfm2.feed_forward_length": uint32(4608),
		"lfm2.attention.head_count": uint32(16), "lfm2.shortconv.l_cache": uint32(3), "lfm2.context_length": uint32(128000),
		"lfm2.rope.freq_base": float32(1e6), "lfm2.attention.layer_norm_rms_epsilon": float32(1e-5),
	} {
		if kv[k] != want {
			t.Errorf("%s = %v (%T), want %v (%T)", k, kv[k], kv[k], want, want)
		}
	}
	want := []uint32{0, 0, 8, 0, 0, 8, 0, 0, 8, 0, 8, 0, 8, 0, 8, 0}
	if got, _ := kv["lfm2.attention.head_count_kv"].([]uint32); !slices.Equal(got, want) {
		t.Errorf("head_count_kv %v, want %v", got, want)
	}
	params, byName := paramsAndShapes(ts)
	if params != 354483968 {
		t.Errorf("%d parameters, want 354,483,968", params)
	}
	if c := byName["blk.0.shortconv.conv.weight"]; !c.F32 || !slices.Equal(c.Shape, []uint64{1024, 3}) {
		t.Errorf("conv: F32 %v, shape %v; want float32 [1024 3]", c.F32, c.Shape)
	}
}
