//go:build cgo

package convert_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/ollama/ollama/fs/ggml"
	"github.com/udgamlabs/udgam-ci/convert/archtest"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner/llama"
)

// ssmCase is one state-space architecture: a tiny checkpoint and the
// float64 reference that reads the same config.json and tensors.
type ssmCase struct {
	name       string
	checkpoint converttest.Checkpoint
	ref        func(config []byte, w map[string][]float32) (*testmodel.Reference, error)
	// formats the exactness check converts from. Reading the formats is
	// the same code for every architecture, so each takes two and the
	// three together all four, which keeps the tests short.
	formats []converttest.Format
}

var ssmCases = []ssmCase{
	{"falcon-h1", converttest.SmallFalconH1.Checkpoint(), testmodel.FalconH1Reference, []converttest.Format{converttest.Safetensors, converttest.ShardedTorch}},
	{"mamba2", converttest.SmallMamba2.Checkpoint(), testmodel.Mamba2Reference, []converttest.Format{converttest.Safetensors, converttest.Torch}},
	{"mamba", converttest.SmallMamba.Checkpoint(), testmodel.MambaReference, []converttest.Format{converttest.ShardedSafetensors, converttest.ShardedTorch}},
}

// reference builds c's reference from its checkpoint.
func (c ssmCase) reference(w map[string][]float32) (*testmodel.Reference, error) {
	config, err := json.Marshal(c.checkpoint.Config)
	if err != nil {
		return nil, err
	}
	return c.ref(config, w)
}

// falconH1Reference is the float64 reference of a Falcon-H1 checkpoint,
// reading its config.json.
func falconH1Reference(c converttest.Checkpoint) func(map[string][]float32) (*testmodel.Reference, error) {
	return ssmCase{checkpoint: c, ref: testmodel.FalconH1Reference}.reference
}

// writeSSM writes c's checkpoint as safetensors and returns its directory
// and reference.
func writeSSM(t *testing.T, c ssmCase) (dir string, ref *testmodel.Reference) {
	t.Helper()
	dir = t.TempDir()
	if err := c.checkpoint.Write(dir, converttest.Safetensors); err != nil {
		t.Fatal(err)
	}
	ref, err := c.reference(c.checkpoint.Values())
	if err != nil {
		t.Fatal(err)
	}
	return dir, ref
}

// TestSSMArchitectures converts each tiny checkpoint from two weight
// formats (all four among the three) to f32, scores a 2,048-token sequence through llama.cpp and
// compares every token's log-probability with the float64 sequential-scan
// reference (archtest.Exact), then runs the invariance checks on the
// converted file: several sequences packed in one decode, each with its
// own recurrent state, give what each gives alone, whatever the threads,
// batch, parallel sequences and cache layout.
func TestSSMArchitectures(t *testing.T) {
	t.Parallel()
	for _, c := range ssmCases {
		t.Run(c.name, func(t *testing.T) {
			worst, gguf := archtest.Exact(t, archtest.Case{Checkpoint: c.checkpoint, Reference: c.reference, Formats: c.formats})
			t.Logf("%s: at most %.3g nats from the float64 reference", c.name, worst)
			// Fewer requests than archtest.Invariance's: a recurrent model
			// decodes packed sequences of unequal lengths in many small
			// steps, each a graph computation.
			v := converttest.Vocab
			reqs := llamatest.RandomSequences(2, 3, 200, v, int32(v-1))
			reqs = append(reqs, llamatest.ProbeLike(rand.New(rand.NewPCG(3, 3)), 6, int32(v-1))...)
			llamatest.Invariance(t, gguf, reqs)
		})
	}
}

// TestFalconH1EveryMultiplierCounts makes the match above mean something
// for each µP multiplier: changing any one of them (one entry of a list at
// a time) in config.json moves the reference by far more than the
// tolerance, so a converter that left one out would fail.
func TestFalconH1EveryMultiplierCounts(t *testing.T) {
	t.Parallel()
	c := ssmCases[0]
	dir, ref := writeSSM(t, c)
	config, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tensors := map[string][]float32{}
	for name, v := range c.checkpoint.Values() {
		tensors[name] = v
	}
	req := llamatest.RandomSequences(5, 1, 64, converttest.Vocab, 0)
	base, err := ref.Score(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(config, &raw); err != nil {
		t.Fatal(err)
	}
	type change struct {
		key   string
		index int // -1 for a scalar
	}
	var changes []change
	for key, v := range converttest.SmallFalconH1.Multipliers {
		if list, ok := v.([]float64); ok {
			for i := range list {
				changes = append(changes, change{key, i})
			}
		} else {
			changes = append(changes, change{key, -1})
		}
	}
	for _, ch := range changes {
		changed := map[string]any{}
		for k, v := range raw {
			changed[k] = v
		}
		if ch.index < 0 {
			changed[ch.key] = raw[ch.key].(float64) * 1.5
		} else {
			list := slices.Clone(raw[ch.key].([]any))
			list[ch.index] = list[ch.index].(float64) * 1.5
			changed[ch.key] = list
		}
		b, _ := json.Marshal(changed)
		other, err := testmodel.FalconH1Reference(b, tensors)
		if err != nil {
			t.Fatal(err)
		}
		got, err := other.Score(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i, g := range got[0][0] {
			worst = max(worst, math.Abs(g-base[0][0][i]))
		}
		if worst < 1e-3 {
			t.Errorf("%s[%d] x1.5 moves the reference by only %.2g nats", ch.key, ch.index, worst)
		}
	}
}

// TestSSMDtypes converts each architecture to every output dtype: the
// scan's tensors stay float32 (ggml's CPU ssm_conv asserts it, aborting the
// process), the model loads and scores, and its log-probabilities stay near
// the float32 file's.
func TestSSMDtypes(t *testing.T) {
	t.Parallel()
	for _, c := range ssmCases {
		t.Run(c.name, func(t *testing.T) {
			dir, ref := writeSSM(t, c)
			req := llamatest.RandomSequences(9, 1, 96, converttest.Vocab, 0)
			want, err := ref.Score(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			for _, dtype := range convert.Dtypes {
				out := filepath.Join(t.TempDir(), dtype+".gguf")
				if _, err := convert.Dir(dir, out, convert.Options{Dtype: dtype}); err != nil {
					t.Fatalf("%s: %v", dtype, err)
				}
				g, err := testmodel.ReadGGUF(out)
				if err != nil {
					t.Fatal(err)
				}
				for name, tt := range g.Tensors {
					scan := strings.Contains(name, "ssm_conv1d") || strings.HasSuffix(name, "ssm_a") ||
						strings.HasSuffix(name, "ssm_d") || strings.Contains(name, "norm")
					if scan && tt.Kind != uint32(ggml.TensorTypeF32) {
						t.Errorf("%s: %s has type %d, want F32", dtype, name, tt.Kind)
					}
				}
				m, err := llama.Load(out, llama.Options{Threads: 1, Context: 256, Parallel: 1})
				if err != nil {
					t.Fatalf("%s: %v", dtype, err)
				}
				got, err := m.Score(context.Background(), req)
				m.Close()
				if err != nil {
					t.Fatalf("%s: %v", dtype, err)
				}
				var sum float64
				for i, v := range got[0][0] {
					sum += math.Abs(v - want[0][0][i])
				}
				mean := sum / float64(len(got[0][0]))
				t.Logf("%s %s: mean difference from the float64 reference %.2g nats", c.name, dtype, mean)
				if !(mean < 0.05) {
					t.Errorf("%s: mean difference %.3g nats from the reference", dtype, mean)
				}
			}
		})
	}
}

// shapeWeights has a checkpoint's tensor shapes and no values: enough to
// see what a converter makes of a model too large to write in a test.
type shapeWeights map[string][]uint64

func (w shapeWeights) Names() []string            { return slices.Sorted(maps.Keys(w)) }
func (w shapeWeights) Shape(name string) []uint64 { return w[name] }
func (w shapeWeights) Read(name string) ([]float32, error) {
	return nil, fmt.Errorf("tensor %s: this test has shapes only", name)
}

// TestFalconH1TinyReferenceConfig takes the configuration of
// Falcon-H1-Tiny-90M-Base (testdata/README.md says where
// each value comes from). At full size its tensors must add up to the
// published 91,131,072 parameters, and the converter's metadata and tensor
// shapes must be the ones llama.cpp's falcon-h1 loader creates (written
// here from llama-model.cpp). At tiny scale, with every other option of
// that config, it must convert and match the float64 reference.
func TestFalconH1TinyReferenceConfig(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/falcon-h1-tiny-90m-base.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	full := converttest.FalconH1{Hidden: 512, FFN: 768, Layers: 24, Heads: 8, KVHeads: 2, HeadDim: 64,
		SSMInner: 768, SSMHeads: 24, SSMHeadDim: 32, State: 64, Groups: 1, Kernel: 4, Tied: true, VocabSize: 32768}
	shapes := full.Shapes()
	var params uint64
	for _, s := range shapes {
		n := uint64(1)
		for _, d := range s {
			n *= d
		}
		params += n
	}
	if params != 91131072 {
		t.Errorf("the reference config's tensors hold %d parameters; Falcon-H1-Tiny-90M-Base has 91,131,072", params)
	}
	cfg, err := convert.ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	kv, tensors, err := convert.FalconH1.Convert(cfg, shapeWeights(shapes))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{
		"falcon-h1.embedding_length": uint32(512), "falcon-h1.block_count": uint32(24),
		"falcon-h1.feed_forward_length": uint32(768), "falcon-h1.attention.head_count": uint32(8),
		"falcon-h1.attention.head_count_kv": uint32(2), "falcon-h1.attention.key_length": uint32(64),
		"falcon-h1.attention.value_length": uint32(64), "falcon-h1.ssm.conv_kernel": uint32(4),
		"falcon-h1.ssm.inner_size": uint32(768), "falcon-h1.ssm.state_size": uint32(64),
		"falcon-h1.ssm.time_step_rank": uint32(24), "falcon-h1.ssm.group_count": uint32(1),
		"falcon-h1.rope.freq_base": float32(1e11), "falcon-h1.context_length": uint32(262144),
		"falcon-h1.vocab_size": uint32(32768),
	} {
		if kv[key] != want {
			t.Errorf("%s = %v (%T), want %v", key, kv[key], kv[key], want)
		}
	}
	// llama.cpp's create_tensor shapes for falcon-h1, fastest dimension
	// first: d_in_proj = 2*d_ssm + 2*groups*state + heads = 1688, conv
	// channels d_ssm + 2*groups*state = 896. The output matrix is its own
	// tensor: the tied embeddings carry different multipliers.
	want := map[string][]uint64{
		"token_embd.weight": {512, 32768}, "output.weight": {512, 32768}, "output_norm.weight": {512},
	}
	for l := range 24 {
		b := fmt.Sprintf("blk.%d.", l)
		for name, shape := range map[string][]uint64{
			"attn_norm.weight": {512}, "attn_q.weight": {512, 512}, "attn_k.weight": {512, 128},
			"attn_v.weight": {512, 128}, "attn_output.weight": {512, 512},
			"ssm_in.weight": {512, 1688}, "ssm_conv1d.weight": {4, 896}, "ssm_conv1d.bias": {896},
			"ssm_dt.bias": {24}, "ssm_a": {1, 24}, "ssm_d": {1, 24}, "ssm_out.weight": {768, 512},
			"ffn_norm": {512}, "ffn_gate.weight": {512, 768}, "ffn_up.weight": {512, 768}, "ffn_down.weight": {768, 512},
		} {
			want[b+name] = shape
		}
	}
	got := map[string][]uint64{}
	for _, tt := range tensors {
		s := slices.Clone(tt.Shape)
		slices.Reverse(s) // GGUF order
		got[tt.Name] = s
	}
	for name, shape := range want {
		if !slices.Equal(got[name], shape) {
			t.Errorf("%s: shape %v, llama.cpp creates %v", name, got[name], shape)
		}
	}
	for name := range got {
		if want[name] == nil {
			t.Errorf("tensor %s is not one llama.cpp's falcon-h1 loads", name)
		}
	}

	tiny := converttest.SmallFalconH1
	tiny.RMSNorm, tiny.Groups, tiny.Multipliers, tiny.Extra = false, 1, nil, raw
	c := tiny.Checkpoint()
	worst, gguf := archtest.Exact(t, archtest.Case{Checkpoint: c, Formats: []converttest.Format{converttest.Safetensors},
		Reference: falconH1Reference(c)})
	t.Logf("tiny model with the reference config's options: at most %.3g nats from the float64 reference", worst)
	info, err := runner.ReadInfo(gguf)
	if err != nil {
		t.Fatal(err)
	}
	if info.HasBOS() || info.AddBOS {
		t.Errorf("the converted model has BOS %d (add_bos %v); Falcon-H1-Tiny's tokenizer has none", info.BOS, info.AddBOS)
	}
}

// TestSSMRefusals: every option that changes the math and that llama.cpp
// does not compute is refused, naming its key, before anything is written;
// sizes llama.cpp would assert on (aborting the process) are refused in Go.
func TestSSMRefusals(t *testing.T) {
	t.Parallel()
	falcon, mamba2, mamba := ssmCases[0].checkpoint, ssmCases[1].checkpoint, ssmCases[2].checkpoint
	tests := []struct {
		name string
		c    converttest.Checkpoint
		edit map[string]any
		want string
	}{
		{"falcon attention bias", falcon, map[string]any{"attention_bias": true}, "attention_bias = true is not supported"},
		{"falcon mlp bias", falcon, map[string]any{"mlp_bias": true}, "mlp_bias = true is not supported"},
		{"falcon in_proj bias", falcon, map[string]any{"mamba_proj_bias": true}, "mamba_proj_bias = true is not supported"},
		{"falcon out_proj bias", falcon, map[string]any{"projectors_bias": true}, "projectors_bias = true is not supported"},
		{"falcon activation", falcon, map[string]any{"hidden_act": "gelu"}, `hidden_act = "gelu" is not supported`},
		{"falcon rope scaling", falcon, map[string]any{"rope_scaling": map[string]any{"type": "linear", "factor": 2}}, "rope_scaling"},
		{"falcon rope type", falcon, map[string]any{"rope_parameters": map[string]any{"rope_type": "yarn", "rope_theta": 1e4}}, "rope_parameters"},
		{"falcon sliding window", falcon, map[string]any{"sliding_window": 64}, "sliding_window = 64"},
		{"falcon norm before gate", falcon, map[string]any{"mamba_norm_before_gate": true}, "mamba_norm_before_gate = true"},
		{"falcon norm order unknown", falcon, map[string]any{"mamba_norm_before_gate": nil}, "mamba_norm_before_gate is absent"},
		{"falcon mlp multipliers", falcon, map[string]any{"mlp_multipliers": []float64{1}}, "mlp_multipliers"},
		{"falcon ssm multipliers", falcon, map[string]any{"ssm_multipliers": []float64{1, 1}}, "ssm_multipliers"},
		{"falcon groups", falcon, map[string]any{"mamba_n_groups": 3}, "3 SSM groups do not divide 8 SSM heads"},
		{"falcon heads", falcon, map[string]any{"mamba_d_head": 7}, "8 SSM heads of 7 do not make the inner size 64"},
		{"falcon null d_ssm", falcon, map[string]any{"mamba_d_ssm": nil, "mamba_d_head": nil, "mamba_n_heads": 24}, "24 SSM heads of 5 do not make the inner size 128"}, // null: mamba_expand * hidden_size
		{"falcon quantized", falcon, map[string]any{"quantization_config": map[string]any{"bits": 4}}, "quantization_config"},
		{"mamba2 expand", mamba2, map[string]any{"expand": 4, "head_dim": 32}, "expand = 4; llama.cpp's mamba2 takes only expand = 2"},
		{"mamba2 groups", mamba2, map[string]any{"n_groups": 2}, "n_groups = 2"},
		{"mamba2 default groups", mamba2, map[string]any{"n_groups": nil}, "n_groups = 8"},
		{"mamba2 bias", mamba2, map[string]any{"use_bias": true}, "use_bias = true is not supported"},
		{"mamba2 no norm", mamba2, map[string]any{"rms_norm": false}, "rms_norm = false is not supported"},
		{"mamba2 layer types", mamba2, map[string]any{"layer_types": []string{"mamba", "attention"}}, `layer_types[1] = "attention"`},
		{"mamba bias", mamba, map[string]any{"use_bias": true}, "use_bias = true is not supported"},
		{"mamba expand", mamba, map[string]any{"intermediate_size": 96}, "llama.cpp's mamba takes only expand = 2"},
		{"mamba activation", mamba, map[string]any{"hidden_act": "relu"}, `hidden_act = "relu"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.c
			c.Config = maps.Clone(c.Config)
			for k, v := range tt.edit {
				c.Config[k] = v
			}
			dir := t.TempDir()
			if err := c.Write(dir, converttest.Safetensors); err != nil {
				t.Fatal(err)
			}
			convert.CheckRefused(t, dir, convert.Options{}, tt.want)
		})
	}
}

// TestFalconH1MupVector: a stored mup_vector (older checkpoints saved the
// buffer) is used up when it is the config's ssm_multipliers, and refused
// when it is not, since current Hugging Face code ignores it.
func TestFalconH1MupVector(t *testing.T) {
	t.Parallel()
	m := converttest.SmallFalconH1
	c := m.Checkpoint()
	mults := m.Multipliers["ssm_multipliers"].([]float64)
	blocks := []int{m.SSMInner, m.SSMInner, m.Groups * m.State, m.Groups * m.State, m.SSMHeads}
	var mup []float32
	for i, n := range blocks {
		for range n {
			mup = append(mup, float32(mults[i]))
		}
	}
	for _, tt := range []struct {
		name  string
		scale float32
		want  string
	}{{"same", 1, ""}, {"different", 2, "but ssm_multipliers in config.json give"}} {
		t.Run(tt.name, func(t *testing.T) {
			c := c
			c.Tensors = maps.Clone(c.Tensors)
			for l := range m.Layers {
				v := slices.Clone(mup)
				for i := range v {
					v[i] *= tt.scale
				}
				name := fmt.Sprintf("model.layers.%d.mamba.mup_vector", l)
				c.Tensors[name] = converttest.Tensor{Name: name, Shape: []uint64{1, 1, uint64(len(v))}, Values: v}
			}
			dir := t.TempDir()
			if err := c.Write(dir, converttest.Safetensors); err != nil {
				t.Fatal(err)
			}
			_, err := convert.Dir(dir, filepath.Join(t.TempDir(), "m.gguf"), convert.Options{})
			if tt.want == "" && err != nil {
				t.Fatal(err)
			}
			if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestSSMStateSlots: a recurrent model has one state slot per parallel
// sequence. More branches than slots is a Go error before any decode (not
// llama.cpp's assertion), and more requests than slots are decoded in
// turn, each from a fresh state, giving what each gives alone.
func TestSSMStateSlots(t *testing.T) {
	t.Parallel()
	for _, c := range ssmCases[:2] {
		t.Run(c.name, func(t *testing.T) {
			dir, ref := writeSSM(t, c)
			out := filepath.Join(t.TempDir(), "m.gguf")
			if _, err := convert.Dir(dir, out, convert.Options{}); err != nil {
				t.Fatal(err)
			}
			m := llamatest.Load(t, out, llama.Options{Threads: 1, Parallel: 2, Context: 1024})
			shared := llamatest.ProbeLike(rand.New(rand.NewPCG(4, 4)), 1, int32(converttest.Vocab-1))
			shared[0].Branches = append(shared[0].Branches, shared[0].Branches...) // 4 or more branches
			if _, err := m.Score(context.Background(), shared); err == nil || !strings.Contains(err.Error(), "parallel sequences") {
				t.Errorf("%d branches on 2 state slots: error %v", len(shared[0].Branches), err)
			}
			reqs := llamatest.RandomSequences(6, 5, 120, converttest.Vocab, int32(converttest.Vocab-1))
			if d := llamatest.MaxDiff(t, llamatest.Score(t, m, reqs), llamatest.Score(t, ref, reqs)); d > archtest.Tolerance {
				t.Errorf("5 requests on 2 state slots differ from the reference by %g", d)
			}
		})
	}
}

// TestPythonInfinity: transformers 4 writes Mamba-2's and Falcon-H1's
// default time_step_limit as [0.0, Infinity], which is not JSON, and
// transformers 5 as [0.0, {"__float__": "Infinity"}]. Such a
// config.json parses (text inside strings untouched), the default converts,
// and a real clamp is refused by name.
func TestPythonInfinity(t *testing.T) {
	t.Parallel()
	cfg, err := convert.ParseConfig([]byte(`{"architectures": ["X"], "model_type": "x", "s": "NaN, Infinity \"Infinity\"", "v": [0.0, -Infinity, NaN, Infinity]}`))
	if err != nil {
		t.Fatal(err)
	}
	var s string
	var v []any
	if err := cfg.Get("s", &s); err != nil || s != `NaN, Infinity "Infinity"` {
		t.Errorf("string %q, %v", s, err)
	}
	if err := cfg.Get("v", &v); err != nil || fmt.Sprint(v) != "[0 -Infinity NaN Infinity]" {
		t.Errorf("list %v, %v", v, err)
	}
	// transformers 5 writes the default as [0.0, {"__float__": "Infinity"}]
	// (make crosscheck found it refused).
	for _, tt := range []struct{ limit, want string }{{"[0.0, Infinity]", ""}, {`[0.0, {"__float__": "Infinity"}]`, ""},
		{"[0.0, 0.1]", "time_step_limit = [0.0,0.1] is not supported"}, {`[0.0, {"__float__": "NaN"}]`, `time_step_limit = [0.0,"NaN"] is not supported`}} {
		for _, c := range ssmCases[:2] {
			dir := t.TempDir()
			if err := c.checkpoint.Write(dir, converttest.Safetensors); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "config.json")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b = append([]byte(`{"time_step_limit": `+tt.limit+`,`), b[1:]...)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.want != "" {
				convert.CheckRefused(t, dir, convert.Options{}, tt.want)
			} else if _, err := convert.Dir(dir, filepath.Join(t.TempDir(), "m.gguf"), convert.Options{}); err != nil {
				t.Errorf("%s with time_step_limit %s: %v", c.name, tt.limit, err)
			}
		}
	}
}

// TestFalconH1NoConvBias: with mamba_conv_bias false the checkpoint has no
// conv1d.bias, and llama.cpp's Mamba-2 layer adds one whatever the GGUF
// holds (a missing tensor aborted the process inside C); the converter
// writes zeros, the same math, and the model scores as its reference does.
func TestFalconH1NoConvBias(t *testing.T) {
	t.Parallel()
	m := converttest.SmallFalconH1
	m.Extra = map[string]any{"mamba_conv_bias": false}
	c := m.Checkpoint()
	c.Tensors = maps.Clone(c.Tensors)
	for name := range c.Tensors {
		if strings.HasSuffix(name, "conv1d.bias") {
			delete(c.Tensors, name)
		}
	}
	worst, _ := archtest.Exact(t, archtest.Case{Checkpoint: c, Formats: []converttest.Format{converttest.Safetensors},
		Reference: falconH1Reference(c)})
	t.Logf("no conv bias: at most %.3g nats from the float64 reference", worst)
}

// TestFalconH1Defaults: keys absent from config.json take FalconH1Config's
// defaults (transformers 5.19) in the converter and in the float64
// reference alike: rope_theta 1e4 (RotaryEmbeddingConfigMixin.default_theta;
// transformers 4 said 1e5), num_key_value_heads 8, head_dim
// hidden/heads, mamba_d_head "auto". The tiny model's sizes are chosen so
// that each default is a valid, different model from the explicit keys
// it replaces; with rope_theta 1e4 written, the two must agree exactly.
func TestFalconH1Defaults(t *testing.T) {
	t.Parallel()
	m := converttest.SmallFalconH1
	m.Heads, m.KVHeads, m.HeadDim, m.Hidden = 8, 8, 8, 64 // num_key_value_heads 8 and head_dim 64/8 are the defaults
	c := m.Checkpoint()
	c.Config = maps.Clone(c.Config)
	for _, k := range []string{"rope_theta", "num_key_value_heads", "head_dim", "mamba_d_head"} {
		delete(c.Config, k)
	}
	ref := falconH1Reference(c)
	_, gguf := archtest.Exact(t, archtest.Case{Checkpoint: c, Formats: []converttest.Format{converttest.Safetensors}, Reference: ref})
	g, err := testmodel.ReadGGUF(gguf)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.KV.Float("rope.freq_base"); got != 1e4 {
		t.Errorf("rope.freq_base %v without rope_theta; FalconH1Config's default is 1e4", got)
	}
	// The reference reads the same default: written out, 1e4 gives the
	// same scores, and another base does not.
	w := c.Values()
	req := llamatest.RandomSequences(5, 1, 64, converttest.Vocab, 0)
	score := func(theta any) []runner.Result {
		cfg := maps.Clone(c.Config)
		if theta != nil {
			cfg["rope_theta"] = theta
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r, err := testmodel.FalconH1Reference(b, w)
		if err != nil {
			t.Fatal(err)
		}
		return llamatest.Score(t, r, req)
	}
	absent := score(nil)
	if d := llamatest.MaxDiff(t, score(1e4), absent); d != 0 {
		t.Errorf("the reference without rope_theta differs from rope_theta 1e4 by %.3g nats", d)
	}
	if d := llamatest.MaxDiff(t, score(1e5), absent); d < 1e-3 {
		t.Errorf("rope_theta 1e5 moves the reference by only %.3g nats; the default is not tested", d)
	}
}
