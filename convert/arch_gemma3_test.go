//go:build cgo

package convert_test

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/archtest"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

func gemma3Case(g converttest.Gemma3, formats ...converttest.Format) archtest.Case {
	return archtest.Case{Checkpoint: g.Checkpoint(), Reference: g.Model.Reference, Formats: formats}
}

// gemma3Source is one source dtype TestGemma3Exact converts, with its
// weight formats.
type gemma3Source struct {
	name    string
	g       converttest.Gemma3
	formats []converttest.Format
}

func gemma3Sources() []gemma3Source {
	tiny := converttest.TinyGemma3()
	capped := tiny // Gemma 2's final soft-capping, kept by Gemma 3's config; an lm_head
	capped.FinalLogitSoftcap, capped.Tied = 3, false
	return []gemma3Source{
		{"f32", converttest.Gemma3{Model: tiny, Dtype: "F32", Seed: 1}, []converttest.Format{converttest.Safetensors, converttest.ShardedTorch}},
		{"bf16 soft-capped untied", converttest.Gemma3{Model: capped, Dtype: "BF16", Seed: 2}, []converttest.Format{converttest.ShardedSafetensors}},
		{"f16", converttest.Gemma3{Model: tiny, Dtype: "F16", Seed: 3}, []converttest.Format{converttest.Torch}},
	}
}

// Each source dtype and weight format, converted to f32, against the
// float64 reference on 2,048 tokens; then the invariance checks (threads,
// batch, packing, separate caches, shared prompt) on the converted file,
// with sequences longer than the window.
func TestGemma3Exact(t *testing.T) {
	t.Parallel()
	for i, tt := range gemma3Sources() {
		t.Run(tt.name, func(t *testing.T) {
			_, gguf := archtest.Exact(t, gemma3Case(tt.g, tt.formats...))
			if i == 0 {
				invariance(t, gguf)
			}
		})
	}
}

// invariance runs llamatest's invariance checks on a converted tiny model
// with requests shaped like the scorers' (whole sequences longer than
// Gemma's window, shared prompts with choices), sized for the time budget.
func invariance(t *testing.T, gguf string) {
	t.Helper()
	bos := int32(converttest.Vocab - 1)
	reqs := llamatest.RandomSequences(5, 2, 200, converttest.Vocab, bos)
	reqs = append(reqs, llamatest.ProbeLike(rand.New(rand.NewPCG(5, 5)), 8, bos)...)
	llamatest.Invariance(t, gguf, reqs)
}

// f16, bf16 and q8_0 files load and score; their matrix products round
// activations to the weights' type, so they are bounded on average and
// loosely (measured: 0.0032, 0.024 and 0.076 nats per token).
func TestGemma3OutputDtypes(t *testing.T) {
	t.Parallel()
	d := archtest.OutputDtypes(t, gemma3Case(converttest.Gemma3{Model: converttest.TinyGemma3(), Dtype: "F32", Seed: 4}), "f16", "bf16", "q8_0")
	if d["f16"] > 0.02 || d["bf16"] > 0.15 || d["q8_0"] > 0.5 {
		t.Errorf("mean differences from the reference %v; want at most 0.02 (f16), 0.15 (bf16), 0.5 (q8_0) nats", d)
	}
}

func TestGemma3Refuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		extra map[string]any
		model func(*testmodel.Gemma3)
		want  string
	}{
		{"attention soft-capping", map[string]any{"attn_logit_softcapping": 50.0}, nil, "attn_logit_softcapping = 50"},
		{"rope scaling", map[string]any{"rope_scaling": map[string]any{"rope_type": "linear", "factor": 8.0}}, nil, "rope_scaling = {"},
		{"local rope base", map[string]any{"rope_local_base_freq": 20000.0}, nil, "rope_local_base_freq = 20000"},
		// transformers 5's form: one rope dict per layer type.
		{"rope_parameters linear", map[string]any{"rope_parameters": map[string]any{
			"full_attention":    map[string]any{"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 1e4}}}, nil, "rope_parameters.full_attention.factor = 8 is not supported"},
		{"rope_parameters yarn on sliding layers", map[string]any{"rope_parameters": map[string]any{
			"sliding_attention": map[string]any{"rope_type": "yarn", "rope_theta": 1e4}}}, nil, `rope_parameters.sliding_attention.rope_type = "yarn" is not supported`},
		{"rope_parameters local base", map[string]any{"rope_parameters": map[string]any{
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 2e4}}}, nil, "rope_parameters.sliding_attention.rope_theta = 20000 is not supported"},
		{"rope_parameters flat", map[string]any{"rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 1e6}}, nil, "rope_parameters.rope_theta is not supported"},
		{"query scalar", map[string]any{"query_pre_attn_scalar": 64}, nil, "query_pre_attn_scalar = 64"},
		{"activation", map[string]any{"hidden_activation": "gelu"}, nil, "hidden_activation = \"gelu\""},
		{"bidirectional", map[string]any{"use_bidirectional_attention": true}, nil, "use_bidirectional_attention = true"},
		{"attention bias", map[string]any{"attention_bias": true}, nil, "attention_bias = true"},
		{"layer pattern", map[string]any{"layer_types": []string{"sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"}}, nil, "layer_types [sliding_attention full_attention"},
		{"sliding_window_pattern", map[string]any{"layer_types": nil, "sliding_window_pattern": 3}, nil, "layer_types [sliding_attention sliding_attention full_attention"},
		// llama.cpp's cache for global layers would hold no layer: abort.
		{"no global layer", nil, func(m *testmodel.Gemma3) { m.Layers, m.LayerTypes = 2, converttest.Gemma3LayerTypes(2) }, "num_hidden_layers = 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := converttest.TinyGemma3()
			if tt.model != nil {
				tt.model(&m)
			}
			dir := t.TempDir()
			if err := (converttest.Gemma3{Model: m, Dtype: "BF16", Seed: 1, Extra: tt.extra}).Checkpoint().Write(dir, converttest.Safetensors); err != nil {
				t.Fatal(err)
			}
			_, err := convert.Dir(dir, filepath.Join(t.TempDir(), "m.gguf"), convert.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

// convertTiny writes checkpoint c and converts it to a GGUF of dtype.
func convertTiny(t *testing.T, c converttest.Checkpoint, dtype string) *testmodel.GGUF {
	t.Helper()
	src := t.TempDir()
	if err := c.Write(src, converttest.Safetensors); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.gguf")
	if _, err := convert.Dir(src, out, convert.Options{Dtype: dtype}); err != nil {
		t.Fatal(err)
	}
	g, err := testmodel.ReadGGUF(out)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A GGUF on which llama.cpp would abort (a sliding-window gemma3 with no
// global layer, cut down from a converted one) is refused in Go at load;
// one missing a tensor is llama.cpp's own load error.
func TestGemma3UnloadableIsAGoError(t *testing.T) {
	t.Parallel()
	g := convertTiny(t, converttest.Gemma3{Model: converttest.TinyGemma3(), Dtype: "BF16", Seed: 1}.Checkpoint(), "f32")
	var drop []string
	for name := range g.Tensors {
		if strings.HasPrefix(name, "blk.") && !strings.HasPrefix(name, "blk.0.") && !strings.HasPrefix(name, "blk.1.") {
			drop = append(drop, name)
		}
	}
	bad := filepath.Join(t.TempDir(), "two-layers.gguf")
	if err := g.Rewrite(bad, func(kv ggml.KV) { kv["gemma3.block_count"] = uint32(2) }, drop...); err != nil {
		t.Fatal(err)
	}
	if _, err := llama.Load(bad, llama.Options{Threads: 1}); err == nil || !strings.Contains(err.Error(), "without a global-attention layer") {
		t.Errorf("two layers: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "missing.gguf")
	if err := g.Rewrite(missing, nil, "blk.5.attn_k_norm.weight"); err != nil {
		t.Fatal(err)
	}
	if _, err := llama.Load(missing, llama.Options{Threads: 1}); err == nil || !strings.Contains(err.Error(), "blk.5.attn_k_norm.weight") {
		t.Errorf("missing tensor: %v", err)
	}
}

// paramsAndShapes adds up the converted tensors and indexes their shapes.
func paramsAndShapes(ts []convert.Tensor) (uint64, map[string]convert.Tensor) {
	var params uint64
	byName := map[string]convert.Tensor{}
	for _, tt := range ts {
		n := uint64(1)
		for _, x := range tt.Shape {
			n *= x
		}
		params += n
		byName[tt.Name] = tt
	}
	return params, byName
}

// Gemma 3 270M's config.json (testdata/configs/gemma3-270m.json;
// testdata/README.md says where it comes from) with its full-size tensor
// shapes: the key-values llama.cpp reads and 268,098,176 parameters (counted
// by hand from the config: 167,772,160 in the embedding, 5,573,632 per
// layer, 640 in the last norm).
func TestGemma3_270MConfig(t *testing.T) {
	t.Parallel()
	b, _ := json.Marshal(readRefConfig(t, "gemma3-270m.json"))
	cfg, err := convert.ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	full := testmodel.Gemma3{Hidden: 640, FFN: 2048, Layers: 18, Heads: 4, KVHeads: 1, HeadDim: 256, Vocab: 262144, Tied: true}
	kv, ts, err := convert.Gemma3.Convert(cfg, shapesOnly(full.Shapes()))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"gemma3.embedding_length": uint32(640), "gemma3.block_count": uint32(18), "gemma3.feed_forward_length": uint32(2048),
		"gemma3.attention.head_count": uint32(4), "gemma3.attention.head_count_kv": uint32(1), "gemma3.attention.key_length": uint32(256),
		"gemma3.attention.sliding_window": uint32(512), "gemma3.context_length": uint32(32768), "gemma3.rope.freq_base": float32(1e6),
		"gemma3.attention.layer_norm_rms_epsilon": float32(1e-6), "gemma3.rope.dimension_count": uint32(256),
	} {
		if kv[k] != want {
			t.Errorf("%s = %v (%T), want %v (%T)", k, kv[k], kv[k], want, want)
		}
	}
	if _, ok := kv["gemma3.final_logit_softcapping"]; ok {
		t.Error("final_logit_softcapping is null, yet written")
	}
	params, byName := paramsAndShapes(ts)
	if params != 268098176 {
		t.Errorf("%d parameters, want 268,098,176", params)
	}
	if _, ok := byName["output.weight"]; ok {
		t.Error("a tied model has output.weight")
	}
	for name, want := range map[string][]uint64{"blk.17.attn_q.weight": {1024, 640}, "blk.17.attn_output.weight": {640, 1024}, "blk.17.attn_k_norm.weight": {256}} {
		if !slices.Equal(byName[name].Shape, want) {
			t.Errorf("%s has shape %v, want %v", name, byName[name].Shape, want)
		}
	}
	for _, name := range []string{"output_norm.weight", "blk.0.post_ffw_norm.weight", "blk.3.attn_q_norm.weight"} {
		if !byName[name].F32 {
			t.Errorf("%s is not kept float32", name)
		}
	}
}

// Stock ggml's rope, which takes its angles in float32 (scripts/engine.sh
// computes them in double), moves the reference past Tolerance on the f16
// case of TestGemma3Exact, so that test would fail were the edit undone.
// Measured: 9.7e-5, 4.9e-5 and 1.4e-4 nats at most on the three cases, the
// difference growing with the position, and llama.cpp with the edit within
// 6.5e-6 of the exact reference (without it, within as much of this one).
func TestGemma3RopeAnglesMatter(t *testing.T) {
	t.Parallel()
	sources := gemma3Sources()
	g := sources[len(sources)-1].g
	w := g.Checkpoint().Values()
	reqs := llamatest.RandomSequences(1, 1, archtest.SeqLen, converttest.Vocab, int32(converttest.Vocab-1))
	score := func(opts ...testmodel.RefOption) []runner.Result {
		ref, err := g.Model.ReferenceWith(w, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return llamatest.Score(t, ref, reqs)
	}
	exact, stock := score(), score(testmodel.WithGGMLRope())
	d := llamatest.MaxDiff(t, stock, exact)
	early := llamatest.MaxDiff(t, []runner.Result{{stock[0][0][:64]}}, []runner.Result{{exact[0][0][:64]}})
	t.Logf("float32 rope angles move the %s reference by %.3g nats at most over %d tokens, %.3g over the first 64", g.Dtype, d, archtest.SeqLen, early)
	if d <= archtest.Tolerance || early >= d/4 {
		t.Errorf("float32 rope angles move the reference by %.3g nats (%.3g over the first 64 tokens); want over %g, growing with the position", d, early, archtest.Tolerance)
	}
}

// A window off by one, no window, the global rope base on sliding layers,
// another query scale or soft-capping each move the reference by far more
// than the exactness tests allow on a 400-token sequence, so a converter
// that dropped one would fail.
func TestGemma3ReferenceFeaturesMatter(t *testing.T) {
	t.Parallel()
	g := converttest.Gemma3{Model: converttest.TinyGemma3(), Dtype: "F32", Seed: 1}
	w := g.Checkpoint().Values()
	reqs := llamatest.RandomSequences(1, 1, 400, converttest.Vocab, int32(converttest.Vocab-1))
	base, err := g.Model.Reference(w)
	if err != nil {
		t.Fatal(err)
	}
	want := llamatest.Score(t, base, reqs)
	for name, change := range map[string]func(*testmodel.Gemma3){
		"window 63":         func(m *testmodel.Gemma3) { m.SlidingWindow = 63 },
		"window 65":         func(m *testmodel.Gemma3) { m.SlidingWindow = 65 },
		"no window":         func(m *testmodel.Gemma3) { m.SlidingWindow = 4096 },
		"global local base": func(m *testmodel.Gemma3) { m.RopeLocalTheta = m.RopeTheta },
		"query scalar":      func(m *testmodel.Gemma3) { m.QueryPreAttnScalar *= 2 },
		"soft-capping":      func(m *testmodel.Gemma3) { m.FinalLogitSoftcap = 3 },
	} {
		m := g.Model
		change(&m)
		ref, err := m.Reference(w)
		if err != nil {
			t.Fatal(err)
		}
		if d := llamatest.MaxDiff(t, llamatest.Score(t, ref, reqs), want); d < 1e-2 {
			t.Errorf("%s moves the reference by only %.3g nats", name, d)
		}
	}
}

// TestGemma3RopeParameters: transformers 5 writes Gemma 3's rope bases in
// rope_parameters, one dict per layer type, and no rope_theta or
// rope_local_base_freq; the converter reads them as Gemma3TextConfig does
// (a global base other than the default, 1e6, must reach the GGUF) and
// the model matches its reference through llama.cpp.
func TestGemma3RopeParameters(t *testing.T) {
	t.Parallel()
	m := converttest.TinyGemma3()
	m.RopeTheta = 5e5
	g := converttest.Gemma3{Model: m, Dtype: "F32", Seed: 6, Extra: map[string]any{
		"rope_theta": nil, "rope_local_base_freq": nil, "rope_scaling": nil,
		"rope_parameters": map[string]any{
			"full_attention":    map[string]any{"rope_type": "default", "rope_theta": 5e5},
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 1e4},
		},
	}}
	worst, gguf := archtest.Exact(t, gemma3Case(g, converttest.Safetensors))
	t.Logf("rope_parameters: at most %.3g nats from the float64 reference", worst)
	f, err := testmodel.ReadGGUF(gguf)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.KV.Float("rope.freq_base"); got != 5e5 {
		t.Errorf("rope.freq_base = %v, want 5e5 from rope_parameters.full_attention", got)
	}
}

// TestGemma3KVHeadsDefault: without num_key_value_heads, Gemma3TextConfig
// (transformers 5.19, as 4.x) takes 4, not the head count.
func TestGemma3KVHeadsDefault(t *testing.T) {
	t.Parallel()
	m := converttest.TinyGemma3()
	m.Heads, m.KVHeads = 8, 4
	c := converttest.Gemma3{Model: m, Dtype: "F32", Seed: 1, Extra: map[string]any{"num_key_value_heads": nil}}.Checkpoint()
	b, err := json.Marshal(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := convert.ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	kv, _, err := convert.Gemma3.Convert(cfg, shapesOnly(m.Shapes()))
	if err != nil {
		t.Fatal(err)
	}
	if got := kv["gemma3.attention.head_count_kv"]; got != uint32(4) {
		t.Errorf("head_count_kv = %v without num_key_value_heads; Gemma3TextConfig's default is 4", got)
	}
}
