//go:build cgo

package convert_test

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/archtest"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// newReference builds a float64 reference from config.json and the
// checkpoint's tensors (testmodel.NewGPT2 and its siblings).
type newReference func([]byte, map[string][]float32, ...testmodel.RefOption) (*testmodel.Reference, error)

// hfCase is an exactness case whose reference reads the checkpoint's own
// config.json, as transformers would.
func hfCase(t *testing.T, c converttest.Checkpoint, ref newReference, opts []testmodel.RefOption, formats ...converttest.Format) archtest.Case {
	t.Helper()
	config, err := json.Marshal(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return archtest.Case{
		Checkpoint: c,
		Reference:  func(w map[string][]float32) (*testmodel.Reference, error) { return ref(config, w, opts...) },
		Formats:    formats,
	}
}

// exactCase is one checkpoint of an architecture's exactness test, with
// the weight formats it is converted from.
type exactCase struct {
	name    string
	ckpt    converttest.Checkpoint
	formats []converttest.Format
}

// exactAndInvariant runs archtest.Exact on each case, and the invariance
// checks on the first case's converted file.
func exactAndInvariant(t *testing.T, ref newReference, cases []exactCase) {
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, gguf := archtest.Exact(t, hfCase(t, c.ckpt, ref, nil, c.formats...))
			if i == 0 && !t.Failed() {
				invariance(t, gguf)
			}
		})
	}
}

// GPT-2 and GPT-NeoX are checked on ordinary random checkpoints, whose
// GELU inputs spread over the curve's bend: udgam-ci's build of ggml
// evaluates GELU in float32 (no float16 table) and gives gptneox the erf
// form Pythia's "gelu" names (scripts/engine.sh); TestGELUMatters shows
// that the 1e-4 bar would catch either being undone.

func TestGPT2Exact(t *testing.T) {
	t.Parallel()
	exactAndInvariant(t, testmodel.NewGPT2, []exactCase{
		// Learned positions all the way to n_positions = the window.
		{"f32 tied", converttest.GPT2{Embd: 32, Heads: 4, Layers: 2, Positions: archtest.SeqLen, Dtype: "F32", Seed: 1}.Checkpoint(),
			[]converttest.Format{converttest.Safetensors, converttest.Torch}},
		// OpenAI's own layout: bare names and the saved causal masks.
		{"bf16 untied bare", converttest.GPT2{Embd: 32, Heads: 2, Layers: 2, Positions: archtest.SeqLen, Dtype: "BF16", Seed: 2, Untied: true, Bare: true}.Checkpoint(),
			[]converttest.Format{converttest.ShardedSafetensors}},
	})
}

func TestGPTNeoXExact(t *testing.T) {
	t.Parallel()
	exactAndInvariant(t, testmodel.NewGPTNeoX, []exactCase{
		{"f32 parallel rotary 0.25", converttest.GPTNeoX{Hidden: 32, Heads: 2, Layers: 2, Intermediate: 64, RotaryPct: 0.25, Parallel: true, Dtype: "F32", Seed: 3}.Checkpoint(),
			[]converttest.Format{converttest.Safetensors}},
		{"bf16 sequential rotary 0.5 buffers", converttest.GPTNeoX{Hidden: 32, Heads: 4, Layers: 2, Intermediate: 64, RotaryPct: 0.5, Dtype: "BF16", Seed: 4, Buffers: true}.Checkpoint(),
			[]converttest.Format{converttest.Torch}},
	})
}

func TestOlmoExact(t *testing.T) {
	t.Parallel()
	exactAndInvariant(t, testmodel.NewOlmo, []exactCase{
		{"f32 clip_qkv", converttest.Olmo{Version: 1, Hidden: 32, Intermediate: 64, Heads: 4, KVHeads: 2, Layers: 2, ClipQKV: 0.8, Dtype: "F32", Seed: 5}.Checkpoint(),
			[]converttest.Format{converttest.Safetensors}},
		{"bf16 tied", converttest.Olmo{Version: 1, Hidden: 32, Intermediate: 64, Heads: 4, KVHeads: 4, Layers: 2, Tied: true, Dtype: "BF16", Seed: 6}.Checkpoint(),
			[]converttest.Format{converttest.ShardedTorch}},
	})
}

func TestOlmo2Exact(t *testing.T) {
	t.Parallel()
	exactAndInvariant(t, testmodel.NewOlmo2, []exactCase{
		{"f32", converttest.Olmo{Version: 2, Hidden: 32, Intermediate: 64, Heads: 4, KVHeads: 2, Layers: 2, Dtype: "F32", Seed: 7}.Checkpoint(),
			[]converttest.Format{converttest.Safetensors}},
		{"bf16 tied", converttest.Olmo{Version: 2, Hidden: 32, Intermediate: 64, Heads: 4, KVHeads: 4, Layers: 2, Tied: true, Dtype: "BF16", Seed: 8}.Checkpoint(),
			[]converttest.Format{converttest.Torch}},
	})
}

// A sequence longer than GPT-2's position table would make llama.cpp read
// past it and abort the process; the engine refuses it instead
// (Info.TrainedLength), and sequences that fill the table score.
func TestGPT2PositionsBeyondTableRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := (converttest.GPT2{Embd: 32, Heads: 4, Layers: 1, Positions: 64, Dtype: "F32", Seed: 1}.Checkpoint()).Write(dir, converttest.Safetensors); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.gguf")
	if _, err := convert.Dir(dir, out, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	m := llamatest.Load(t, out, llama.Options{Threads: 1})
	if got := m.Info().MaxPositions; got != 64 {
		t.Errorf("MaxPositions %d, want 64", got)
	}
	// A GGUF made elsewhere may claim a longer context than its table.
	if got := (runner.Info{ContextLength: 1024, MaxPositions: 64}).TrainedLength(); got != 64 {
		t.Errorf("TrainedLength %d, want the table's 64", got)
	}
	bos := int32(converttest.Vocab - 1)
	llamatest.Score(t, m, llamatest.RandomSequences(1, 2, 64, converttest.Vocab, bos))
	_, err := m.Score(context.Background(), llamatest.RandomSequences(1, 1, 65, converttest.Vocab, bos))
	if err == nil || !strings.Contains(err.Error(), "65 tokens, longer than the model's training context of 64") {
		t.Fatalf("65 tokens on 64 positions: %v", err)
	}
}

// TestGELUMatters shows that the exactness tests would catch the engine
// that stock llama.cpp is: with GELU rounded through ggml's float16 table
// (testmodel.WithGGMLGELU), or with the tanh form on Pythia, the reference
// moves by several times their 1e-4 on the checkpoints TestGPT2Exact and
// TestGPTNeoXExact use.
func TestGELUMatters(t *testing.T) {
	t.Parallel()
	gpt2 := converttest.GPT2{Embd: 32, Heads: 4, Layers: 2, Positions: archtest.SeqLen, Dtype: "F32", Seed: 1}.Checkpoint()
	neox := converttest.GPTNeoX{Hidden: 32, Heads: 2, Layers: 2, Intermediate: 64, RotaryPct: 0.25, Parallel: true, Dtype: "F32", Seed: 3}.Checkpoint()
	tests := []struct {
		name  string
		ckpt  converttest.Checkpoint
		ref   newReference
		other func(config map[string]any) []testmodel.RefOption
	}{
		{"gpt2 float16 table", gpt2, testmodel.NewGPT2, func(map[string]any) []testmodel.RefOption { return []testmodel.RefOption{testmodel.WithGGMLGELU()} }},
		{"gptneox float16 table", neox, testmodel.NewGPTNeoX, func(map[string]any) []testmodel.RefOption { return []testmodel.RefOption{testmodel.WithGGMLGELU()} }},
		{"gptneox tanh form", neox, testmodel.NewGPTNeoX, func(c map[string]any) []testmodel.RefOption { c["hidden_act"] = "gelu_new"; return nil }},
	}
	reqs := llamatest.RandomSequences(1, 1, 512, converttest.Vocab, int32(converttest.Vocab-1))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			score := func(config map[string]any, opts []testmodel.RefOption) []float64 {
				b, err := json.Marshal(config)
				if err != nil {
					t.Fatal(err)
				}
				r, err := tt.ref(b, tt.ckpt.Values(), opts...)
				if err != nil {
					t.Fatal(err)
				}
				return llamatest.Score(t, r, reqs)[0][0]
			}
			config := maps.Clone(tt.ckpt.Config)
			base, other := score(tt.ckpt.Config, nil), score(config, tt.other(config))
			worst := 0.0
			for k := range base {
				worst = max(worst, math.Abs(base[k]-other[k]))
			}
			t.Logf("moves the reference by %.3g nats at most over %d tokens", worst, len(base))
			if worst < 5*archtest.Tolerance {
				t.Errorf("moves the reference by only %.3g nats; the exactness tests would not see it", worst)
			}
		})
	}
}

// TestReferenceFeaturesMatter shows that each feature the exactness tests
// cover changes the log-probabilities by far more than their 1e-4: with it
// changed in config.json, the same weights score otherwise. A converter
// that dropped one could not pass them.
func TestReferenceFeaturesMatter(t *testing.T) {
	t.Parallel()
	gpt2 := converttest.GPT2{Embd: 32, Heads: 4, Layers: 2, Positions: 64, Dtype: "F32", Seed: 1}.Checkpoint()
	neox := converttest.GPTNeoX{Hidden: 32, Heads: 2, Layers: 2, Intermediate: 64, RotaryPct: 0.25, Parallel: true, Dtype: "F32", Seed: 3}.Checkpoint()
	olmo := converttest.Olmo{Version: 1, Hidden: 32, Intermediate: 64, Heads: 4, KVHeads: 2, Layers: 2, ClipQKV: 0.8, Dtype: "F32", Seed: 5}.Checkpoint()
	olmo2 := converttest.Olmo{Version: 2, Hidden: 32, Intermediate: 64, Heads: 4, KVHeads: 2, Layers: 2, Dtype: "F32", Seed: 7}.Checkpoint()
	tests := []struct {
		name   string
		ckpt   converttest.Checkpoint
		ref    newReference
		change func(config map[string]any, w map[string][]float32)
	}{
		{"gpt2 positions", gpt2, testmodel.NewGPT2, func(_ map[string]any, w map[string][]float32) { clear(w["transformer.wpe.weight"]) }},
		{"gptneox parallel residual", neox, testmodel.NewGPTNeoX, func(c map[string]any, _ map[string][]float32) { c["use_parallel_residual"] = false }},
		{"gptneox rotary_pct", neox, testmodel.NewGPTNeoX, func(c map[string]any, _ map[string][]float32) { c["rotary_pct"] = 1.0 }},
		{"olmo clip_qkv", olmo, testmodel.NewOlmo, func(c map[string]any, _ map[string][]float32) { c["clip_qkv"] = nil }},
		{"olmo2 q norm", olmo2, testmodel.NewOlmo2, func(_ map[string]any, w map[string][]float32) {
			for i := range w["model.layers.0.self_attn.q_norm.weight"] {
				w["model.layers.0.self_attn.q_norm.weight"][i] *= 2
			}
		}},
	}
	reqs := llamatest.RandomSequences(2, 1, 64, converttest.Vocab, int32(converttest.Vocab-1))
	score := func(config map[string]any, w map[string][]float32, ref newReference) [][]float64 {
		b, _ := json.Marshal(config)
		r, err := ref(b, w)
		if err != nil {
			t.Fatal(err)
		}
		return llamatest.Score(t, r, reqs)[0]
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := score(tt.ckpt.Config, tt.ckpt.Values(), tt.ref)
			config := map[string]any{}
			for k, v := range tt.ckpt.Config {
				config[k] = v
			}
			w := map[string][]float32{}
			for k, v := range tt.ckpt.Values() {
				w[k] = append([]float32(nil), v...)
			}
			tt.change(config, w)
			other := score(config, w, tt.ref)
			worst := 0.0
			for k := range base[0] {
				worst = max(worst, math.Abs(base[0][k]-other[0][k]))
			}
			if worst < 1e-2 {
				t.Errorf("changing it moved log-probabilities by only %.3g nats", worst)
			}
		})
	}
}

// TestGPTFamilyRefusals: every config option that changes the math and that
// the converters do not implement is refused, naming the key, before a
// file is written.
func TestGPTFamilyRefusals(t *testing.T) {
	t.Parallel()
	gpt2 := converttest.GPT2{Embd: 32, Heads: 4, Layers: 1, Positions: 64, Dtype: "F32", Seed: 1}
	neox := converttest.GPTNeoX{Hidden: 32, Heads: 2, Layers: 1, Intermediate: 64, RotaryPct: 0.25, Parallel: true, Dtype: "F32", Seed: 3}
	olmo := converttest.Olmo{Version: 1, Hidden: 32, Intermediate: 64, Heads: 4, KVHeads: 2, Layers: 1, Dtype: "F32", Seed: 5}
	olmo2 := olmo
	olmo2.Version = 2
	tests := []struct {
		name   string
		ckpt   converttest.Checkpoint
		change func(config map[string]any, tensors map[string]converttest.Tensor)
		want   string
	}{
		{"gpt2 relu", gpt2.Checkpoint(), set("activation_function", "relu"), "activation_function"},
		// llama.cpp's gpt2 applies the tanh form, not the erf one.
		{"gpt2 erf gelu", gpt2.Checkpoint(), set("activation_function", "gelu"), `activation_function = "gelu"`},
		{"gpt2 unscaled attention", gpt2.Checkpoint(), set("scale_attn_weights", false), "scale_attn_weights"},
		{"gpt2 layer-scaled attention", gpt2.Checkpoint(), set("scale_attn_by_inverse_layer_idx", true), "scale_attn_by_inverse_layer_idx"},
		{"gpt2 cross attention", gpt2.Checkpoint(), set("add_cross_attention", true), "add_cross_attention"},
		{"gpt2 wrong positions", gpt2.Checkpoint(), set("n_positions", 128), "wpe.weight"},
		{"gpt2 tied head differs", gpt2.Checkpoint(), func(_ map[string]any, ts map[string]converttest.Tensor) {
			e := ts["transformer.wte.weight"]
			head := converttest.Tensor{Name: "lm_head.weight", Shape: e.Shape, Values: append([]float32(nil), e.Values...)}
			head.Values[3] += 1
			ts[head.Name] = head
		}, "lm_head.weight"},
		{"gptneox rope scaling", neox.Checkpoint(), set("rope_scaling", map[string]any{"type": "linear", "factor": 2}), "rope_scaling"},
		{"gptneox no attention bias", neox.Checkpoint(), set("attention_bias", false), "attention_bias"},
		{"gptneox relu", neox.Checkpoint(), set("hidden_act", "relu"), "hidden_act"},
		// udgam-ci's gptneox applies the erf form (Pythia's "gelu") only.
		{"gptneox tanh gelu", neox.Checkpoint(), set("hidden_act", "gelu_new"), `hidden_act = "gelu_new"`},
		{"gptneox odd rotary", neox.Checkpoint(), set("rotary_pct", 0.2), "rotary_pct"},
		{"gptneox two rotary bases", neox.Checkpoint(), set("rope_theta", 500000), "rope_theta"},
		{"gptneox scaled rope_parameters", neox.Checkpoint(), set("rope_parameters", map[string]any{"rope_type": "linear", "factor": 2.0, "rope_theta": 10000}), "rope_parameters.factor = 2"},
		{"gptneox rope_parameters unlike rotary_pct", neox.Checkpoint(), set("rope_parameters", map[string]any{"rope_type": "default", "partial_rotary_factor": 0.5}), "rope_parameters.partial_rotary_factor 0.5 differs from rotary_pct 0.25"},
		{"olmo scaled rope_parameters", olmo.Checkpoint(), set("rope_parameters", map[string]any{"rope_type": "dynamic", "factor": 2.0}), "rope_parameters.factor = 2"},
		{"olmo attention bias", olmo.Checkpoint(), set("attention_bias", true), "attention_bias"},
		{"olmo rope scaling", olmo.Checkpoint(), set("rope_scaling", map[string]any{"rope_type": "dynamic", "factor": 2}), "rope_scaling"},
		{"olmo gelu", olmo.Checkpoint(), set("hidden_act", "gelu"), "hidden_act"},
		{"olmo negative clip", olmo.Checkpoint(), set("clip_qkv", -1), "clip_qkv"},
		{"olmo head_dim", olmo.Checkpoint(), set("head_dim", 16), "head_dim"},
		{"olmo2 sliding window", olmo2.Checkpoint(), set("sliding_window", 4096), "sliding_window"},
		{"olmo2 missing k norm", olmo2.Checkpoint(), func(_ map[string]any, ts map[string]converttest.Tensor) {
			delete(ts, "model.layers.0.self_attn.k_norm.weight")
		}, "k_norm"},
		{"olmo2 extra tensor", olmo2.Checkpoint(), func(_ map[string]any, ts map[string]converttest.Tensor) {
			ts["model.layers.0.mlp.gate_proj.bias"] = converttest.Tensor{Name: "model.layers.0.mlp.gate_proj.bias", Shape: []uint64{64}, Values: make([]float32, 64)}
		}, "gate_proj.bias"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.ckpt
			tt.change(c.Config, c.Tensors)
			dir := t.TempDir()
			if err := c.Write(dir, converttest.Safetensors); err != nil {
				t.Fatal(err)
			}
			convert.CheckRefused(t, dir, convert.Options{}, tt.want)
		})
	}
}

// TestGPTFamilyRopeParameters converts GPT-NeoX, OLMo and OLMo 2 configs
// as transformers 5 saves them (make crosscheck found them refused):
// rope_theta and GPT-NeoX's rotary fraction inside rope_parameters, the
// old keys gone. The key-values must be those the old keys give.
func TestGPTFamilyRopeParameters(t *testing.T) {
	t.Parallel()
	neox := converttest.GPTNeoX{Hidden: 64, Heads: 4, Layers: 1, Intermediate: 128, RotaryPct: 0.25, Parallel: true}
	olmo := converttest.Olmo{Version: 1, Hidden: 32, Intermediate: 64, Heads: 4, KVHeads: 2, Layers: 1}
	olmo2 := olmo
	olmo2.Version = 2
	for _, tt := range []struct {
		name   string
		config map[string]any
		shapes map[string][]uint64
		drop   []string
		rp     map[string]any
		kv     map[string]any
	}{
		{"gptneox", neox.Config(), neox.Shapes(converttest.Vocab), []string{"rotary_pct", "rotary_emb_base"},
			map[string]any{"partial_rotary_factor": 0.5, "rope_theta": 500000.0, "rope_type": "default"},
			map[string]any{"gptneox.rope.dimension_count": uint32(8), "gptneox.rope.freq_base": float32(500000)}},
		{"olmo", olmo.Config(), olmo.Shapes(converttest.Vocab), []string{"rope_theta"},
			map[string]any{"rope_theta": 500000.0, "rope_type": "default"},
			map[string]any{"olmo.rope.freq_base": float32(500000)}},
		{"olmo2", olmo2.Config(), olmo2.Shapes(converttest.Vocab), []string{"rope_theta"},
			map[string]any{"rope_theta": 500000.0, "rope_type": "default"},
			map[string]any{"olmo2.rope.freq_base": float32(500000)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := maps.Clone(tt.config)
			for _, k := range tt.drop {
				delete(cfg, k)
			}
			cfg["rope_parameters"] = tt.rp
			_, kv, _, _ := convertShapes(t, cfg, tt.shapes)
			for k, want := range tt.kv {
				if kv[k] != want {
					t.Errorf("%s = %v (%T), want %v (%T)", k, kv[k], kv[k], want, want)
				}
			}
		})
	}
}

// set returns a change that sets one config.json key.
func set(key string, v any) func(map[string]any, map[string]converttest.Tensor) {
	return func(c map[string]any, _ map[string]converttest.Tensor) { c[key] = v }
}

// TestGPTFamilyConfigsFullSize converts, from tensor shapes alone, GPT-2
// (124M), Pythia-160M and OLMo-1B at their published sizes, with their
// config.json files (testdata/README.md says where each comes from): no key
// is refused, the key-values are llama.cpp's, and the parameter counts are
// the models' own (computed by hand from each config).
func TestGPTFamilyConfigsFullSize(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		file   string
		shapes map[string][]uint64
		params uint64
		kv     map[string]any
	}{
		{"gpt2.json", converttest.GPT2{Embd: 768, Heads: 12, Layers: 12, Positions: 1024, Bare: true}.Shapes(50257), 124439808, map[string]any{
			"gpt2.context_length": uint32(1024), "gpt2.embedding_length": uint32(768), "gpt2.feed_forward_length": uint32(3072),
			"gpt2.block_count": uint32(12), "gpt2.attention.head_count": uint32(12), "gpt2.attention.layer_norm_epsilon": float32(1e-5)}},
		{"pythia-160m.json", converttest.GPTNeoX{Hidden: 768, Heads: 12, Layers: 12, Intermediate: 3072}.Shapes(50304), 162322944, map[string]any{
			"gptneox.context_length": uint32(2048), "gptneox.rope.dimension_count": uint32(16), "gptneox.rope.freq_base": float32(10000),
			"gptneox.use_parallel_residual": true, "gptneox.attention.layer_norm_epsilon": float32(1e-5), "gptneox.feed_forward_length": uint32(3072)}},
		{"olmo-1b-hf.json", converttest.Olmo{Version: 1, Hidden: 2048, Intermediate: 8192, Heads: 16, KVHeads: 16, Layers: 16, Tied: true}.Shapes(50304), 1176764416, map[string]any{
			"olmo.embedding_length": uint32(2048), "olmo.block_count": uint32(16), "olmo.attention.head_count_kv": uint32(16),
			"olmo.attention.layer_norm_epsilon": float32(1e-5), "olmo.rope.dimension_count": uint32(128)}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			_, kv, _, params := convertShapes(t, readRefConfig(t, tt.file), tt.shapes)
			for k, want := range tt.kv {
				if kv[k] != want {
					t.Errorf("%s = %v (%T), want %v (%T)", k, kv[k], kv[k], want, want)
				}
			}
			if params != tt.params {
				t.Errorf("%d parameters, want %d", params, tt.params)
			}
		})
	}
}
