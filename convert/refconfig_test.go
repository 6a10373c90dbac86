//go:build cgo

package convert_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/archtest"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
)

// The seed's reference models: SmolLM2-135M and 360M (their config.json;
// testdata/README.md says where each comes from) and ~380M Llama- and
// Qwen-style configurations. params is the parameter count computed by hand
// from each config.
var refConfigs = []struct {
	file   string
	gguf   string
	params uint64
	kv     map[string]any
}{
	{"smollm2-135m.json", "llama", 134515008, map[string]any{
		"llama.embedding_length": uint32(576), "llama.block_count": uint32(30), "llama.feed_forward_length": uint32(1536),
		"llama.attention.head_count": uint32(9), "llama.attention.head_count_kv": uint32(3), "llama.rope.dimension_count": uint32(64),
		"llama.context_length": uint32(8192), "llama.rope.freq_base": float32(100000), "llama.attention.layer_norm_rms_epsilon": float32(1e-5),
		"llama.vocab_size": uint32(49152)}},
	{"smollm2-360m.json", "llama", 361821120, map[string]any{
		"llama.embedding_length": uint32(960), "llama.block_count": uint32(32), "llama.feed_forward_length": uint32(2560),
		"llama.attention.head_count": uint32(15), "llama.attention.head_count_kv": uint32(5), "llama.rope.dimension_count": uint32(64),
		"llama.context_length": uint32(8192), "llama.rope.freq_base": float32(100000)}},
	{"llama-384m.json", "llama", 380691456, map[string]any{
		"llama.embedding_length": uint32(1024), "llama.block_count": uint32(28), "llama.attention.head_count_kv": uint32(8),
		"llama.context_length": uint32(2048)}},
	{"qwen2-384m.json", "qwen2", 374733696, map[string]any{
		"qwen2.embedding_length": uint32(896), "qwen2.attention.head_count": uint32(14), "qwen2.attention.head_count_kv": uint32(2),
		"qwen2.rope.dimension_count": uint32(64), "qwen2.rope.freq_base": float32(1e6), "qwen2.context_length": uint32(32768)}},
	{"qwen3-384m.json", "qwen3", 375816704, map[string]any{
		"qwen3.embedding_length": uint32(1024), "qwen3.attention.key_length": uint32(128), "qwen3.rope.dimension_count": uint32(128),
		"qwen3.attention.layer_norm_rms_epsilon": float32(1e-6), "qwen3.context_length": uint32(4096)}},
}

func readRefConfig(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "configs", file))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// decoderOf describes a config's model for the reference forward pass,
// reading the config as Hugging Face's modeling code does.
func decoderOf(cfg map[string]any) testmodel.Decoder {
	n := func(k string) int { return int(cfg[k].(float64)) }
	d := testmodel.Decoder{
		Hidden: n("hidden_size"), FFN: n("intermediate_size"), Layers: n("num_hidden_layers"),
		Heads: n("num_attention_heads"), KVHeads: n("num_key_value_heads"), Vocab: n("vocab_size"),
		Context: n("max_position_embeddings"), Eps: cfg["rms_norm_eps"].(float64), RopeTheta: cfg["rope_theta"].(float64),
		Tied: cfg["tie_word_embeddings"].(bool),
	}
	d.HeadDim = d.Hidden / d.Heads
	if _, ok := cfg["head_dim"]; ok {
		d.HeadDim = n("head_dim")
	}
	switch cfg["model_type"] {
	case "qwen2":
		d.QKVBias = true
	case "qwen3":
		d.QKNorm = true
	}
	return d
}

// shapesOnly is a checkpoint of which only the tensor shapes exist: enough
// to convert the key-values and plan every tensor of a full-size model.
type shapesOnly map[string][]uint64

func (s shapesOnly) Names() []string            { return slices.Sorted(maps.Keys(s)) }
func (s shapesOnly) Shape(name string) []uint64 { return s[name] }
func (s shapesOnly) Read(name string) ([]float32, error) {
	return nil, fmt.Errorf("%s: shapes only", name)
}

// convertShapes converts config.json (as a map) with a checkpoint of only
// the given tensor shapes, failing the test if it cannot, and returns the
// architecture, its key-values, its tensors and their parameter count.
func convertShapes(t *testing.T, raw map[string]any, shapes map[string][]uint64) (*convert.Architecture, convert.KV, []convert.Tensor, uint64) {
	t.Helper()
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := convert.ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	a, err := convert.Lookup(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kv, ts, err := a.Convert(cfg, shapesOnly(shapes))
	if err != nil {
		t.Fatal(err)
	}
	var params uint64
	for _, x := range ts {
		n := uint64(1)
		for _, d := range x.Shape {
			n *= d
		}
		params += n
	}
	return a, kv, ts, params
}

// TestReferenceConfigsFullSize converts each full-size config with the
// tensor shapes its checkpoint has: the key-values llama.cpp reads, every
// tensor's GGUF shape, and the parameter count.
func TestReferenceConfigsFullSize(t *testing.T) {
	t.Parallel()
	for _, rc := range refConfigs {
		t.Run(rc.file, func(t *testing.T) {
			raw := readRefConfig(t, rc.file)
			d := decoderOf(raw)
			a, kv, ts, params := convertShapes(t, raw, d.Shapes())
			if a.GGUF != rc.gguf {
				t.Errorf("GGUF architecture %s, want %s", a.GGUF, rc.gguf)
			}
			for k, want := range rc.kv {
				if kv[k] != want {
					t.Errorf("%s = %v (%T), want %v (%T)", k, kv[k], kv[k], want, want)
				}
			}
			names := map[string][]uint64{}
			for _, tt := range ts {
				names[tt.Name] = tt.Shape
			}
			if params != rc.params {
				t.Errorf("%d parameters, want %d", params, rc.params)
			}
			if _, ok := names["output.weight"]; ok && d.Tied {
				t.Error("a tied model has output.weight")
			}
			q, kvDim := uint64(d.Heads*d.HeadDim), uint64(d.KVHeads*d.HeadDim)
			h, last := uint64(d.Hidden), fmt.Sprintf("blk.%d.", d.Layers-1)
			for name, want := range map[string][]uint64{
				"token_embd.weight": {uint64(d.Vocab), h}, last + "attn_q.weight": {q, h}, last + "attn_k.weight": {kvDim, h},
				last + "attn_output.weight": {h, q}, last + "ffn_down.weight": {h, uint64(d.FFN)}, last + "attn_norm.weight": {h},
			} {
				if !slices.Equal(names[name], want) {
					t.Errorf("%s has shape %v, want %v", name, names[name], want)
				}
			}
		})
	}
}

// TestReferenceConfigsTiny keeps every key of each reference config but
// the sizes, converts a random checkpoint of it, and compares llama.cpp with
// the float64 reference on 2,048 tokens.
func TestReferenceConfigsTiny(t *testing.T) {
	t.Parallel()
	for _, rc := range refConfigs {
		if rc.file == "smollm2-360m.json" {
			continue // at this size the same as 135M: only the sizes differ
		}
		t.Run(rc.file, func(t *testing.T) {
			cfg := readRefConfig(t, rc.file)
			group := cfg["num_attention_heads"].(float64) / cfg["num_key_value_heads"].(float64)
			hd := 16.0
			if cfg["model_type"] == "qwen3" {
				hd = 32 // head_dim apart from hidden_size, as in Qwen3
			}
			cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["num_hidden_layers"] = group, 1.0, 2.0
			cfg["hidden_size"], cfg["intermediate_size"] = group*16, 96.0
			if _, ok := cfg["head_dim"]; ok {
				cfg["head_dim"] = hd
			}
			cfg["vocab_size"] = float64(converttest.Vocab)
			cfg["bos_token_id"], cfg["eos_token_id"] = float64(converttest.Vocab-1), float64(converttest.Vocab-1)
			d := converttest.Decoder{Class: cfg["architectures"].([]any)[0].(string), ModelType: cfg["model_type"].(string),
				Model: decoderOf(cfg), Dtype: "BF16", Seed: 21, Extra: cfg}
			d.Model.Context = min(d.Model.Context, 4096)
			cfg["max_position_embeddings"] = float64(d.Model.Context)
			archtest.Exact(t, decoderCase(d, converttest.Safetensors))
		})
	}
}
