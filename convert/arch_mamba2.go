package convert

import (
	"fmt"
	"math"
)

// Mamba2 is Mamba2ForCausalLM: pre-norm residual blocks of one Mamba-2
// (state-space duality) mixer each, llama.cpp's mamba2.
var Mamba2 = &Architecture{
	Classes: []string{"Mamba2ForCausalLM"},
	GGUF:    "mamba2",
	Kind:    "recurrent",
	Convert: convertMamba2,
}

// mixer2 is one Mamba-2 mixer's sizes as llama.cpp's ssm keys name them.
type mixer2 struct {
	hidden, inner, heads, headDim, state, groups, kernel int
	convBias, norm                                       bool
	// needBias: llama.cpp's loader requires a conv bias (mamba2); one the
	// checkpoint does not have is written as zeros, which is the same math.
	needBias bool
}

func (m mixer2) convDim() int  { return m.inner + 2*m.groups*m.state }
func (m mixer2) projSize() int { return m.inner + m.convDim() + m.heads }

// check refuses sizes llama.cpp's graph cannot run: ggml's ssm_scan asserts
// that the groups divide the heads, and the grouped norm splits the inner
// dimension evenly.
func (m mixer2) check() error {
	switch {
	case m.heads*m.headDim != m.inner:
		return fmt.Errorf("config.json: %d SSM heads of %d do not make the inner size %d", m.heads, m.headDim, m.inner)
	case m.heads%m.groups != 0:
		return fmt.Errorf("config.json: %d SSM groups do not divide %d SSM heads", m.groups, m.heads)
	case m.kernel < 2:
		return fmt.Errorf("config.json: convolution kernel %d: llama.cpp needs at least 2 (its convolution state holds kernel-1 steps)", m.kernel)
	}
	return nil
}

// kv is the ssm part of the GGUF metadata.
func (m mixer2) kv(arch string) KV {
	return KV{
		arch + ".ssm.conv_kernel":    uint32(m.kernel),
		arch + ".ssm.inner_size":     uint32(m.inner),
		arch + ".ssm.state_size":     uint32(m.state),
		arch + ".ssm.time_step_rank": uint32(m.heads), // llama.cpp's name for the head count
		arch + ".ssm.group_count":    uint32(m.groups),
	}
}

// mixer2Names are a Mamba-2 mixer's tensors under prefix (a layer's
// "mamba." in Falcon-H1, "mixer." in Mamba-2), for an architecture's table.
func mixer2Names(prefix string) tensorNames {
	n := tensorNames{}
	for hf, gguf := range map[string]string{
		"in_proj.weight": "ssm_in.weight", "conv1d.weight": "ssm_conv1d.weight", "conv1d.bias": "ssm_conv1d.bias",
		"dt_bias": "ssm_dt.bias", "A_log": "ssm_a", "D": "ssm_d", "norm.weight": "ssm_norm.weight", "out_proj.weight": "ssm_out.weight",
	} {
		n[prefix+hf] = "blk.N." + gguf
	}
	return n
}

// tensors converts one mixer under the checkpoint's prefix p (…mamba. or
// …mixer.), named by tk's table. inProj and outProj map the in_proj rows
// and out_proj (Falcon-H1's multipliers); nil leaves them. The scan's
// parameters stay float32 whatever the dtype: ggml's CPU ssm_conv and
// ssm_scan take only float32.
func (m mixer2) tensors(tk *Taker, p string, inProj, outProj func([]float32) ([]float32, error)) []Tensor {
	take := tk.Named
	h, cd, heads := uint64(m.hidden), uint64(m.convDim()), uint64(m.heads)
	in := take(p+"in_proj.weight", uint64(m.projSize()), h)
	if inProj != nil {
		in = in.Map(inProj)
	}
	conv := take(p+"conv1d.weight", cd, 1, uint64(m.kernel))
	conv.Shape, conv.F32 = []uint64{cd, uint64(m.kernel)}, true // squeeze the depthwise axis
	ts := []Tensor{in, conv}
	if m.convBias {
		cb := take(p+"conv1d.bias", cd)
		cb.F32 = true
		ts = append(ts, cb)
	} else if m.needBias {
		ts = append(ts, tk.Zeros(p+"conv1d.bias", cd))
	}
	dt := take(p+"dt_bias", heads)
	a := take(p+"A_log", heads).Map(negExp)
	d := take(p+"D", heads)
	a.Shape, d.Shape = []uint64{heads, 1}, []uint64{heads, 1}
	dt.F32, a.F32, d.F32 = true, true, true
	ts = append(ts, dt, a, d)
	if m.norm {
		n := take(p+"norm.weight", uint64(m.inner))
		// llama.cpp normalises each group's part of the inner dimension.
		n.Shape, n.F32 = []uint64{uint64(m.groups), uint64(m.inner / m.groups)}, true
		ts = append(ts, n)
	}
	out := take(p+"out_proj.weight", h, uint64(m.inner))
	if outProj != nil {
		out = out.Map(outProj)
	}
	return append(ts, out)
}

// zeros is a float32 tensor of n zeros.
func zeros(name string, n uint64) Tensor {
	return Tensor{Name: name, Shape: []uint64{n}, F32: true, Read: func() ([]float32, error) { return make([]float32, n), nil }}
}

// negExp turns A_log into A = -exp(A_log), the decay rate the scan uses.
func negExp(v []float32) ([]float32, error) {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(-math.Exp(float64(x)))
	}
	return out, nil
}

// scaleBy returns a map multiplying every value by f (exact for f = 1).
func scaleBy(f float64) func([]float32) ([]float32, error) {
	return func(v []float32) ([]float32, error) {
		if f == 1 {
			return v, nil
		}
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(float64(x) * f)
		}
		return out, nil
	}
}

// refuseTimeStepLimit refuses a clamp of the scan's time step other than
// the default (0, inf): llama.cpp's scan does not clamp.
func refuseTimeStepLimit(r *ConfigReader) {
	r.Refuse("time_step_limit", `[0,"Infinity"]`, `[0.0,"Infinity"]`)
}

func convertMamba2(cfg Config, w Weights) (KV, []Tensor, error) {
	r := cfg.Reader()
	m := mixer2{
		hidden:   r.Int("hidden_size"),
		heads:    r.Int("num_heads"),
		state:    r.Int("state_size"),
		groups:   r.IntOr("n_groups", 8), // Hugging Face's default
		kernel:   r.IntOr("conv_kernel", 4),
		norm:     true,
		needBias: true,
	}
	headDim := r.IntOr("head_dim", 64)
	expand := r.FloatOr("expand", 2)
	layers := r.Int("num_hidden_layers")
	vocab := r.Int("vocab_size")
	eps := r.FloatOr("layer_norm_epsilon", 1e-5)
	tied := r.BoolOr("tie_word_embeddings", false)
	m.convBias = r.BoolOr("use_conv_bias", true)
	r.Refuse("use_bias", "false")
	r.Refuse("hidden_act", `"silu"`, `"swish"`)
	// Hugging Face's Mamba2 always applies its gated norm; a config that
	// says otherwise means something else to other code.
	r.Refuse("rms_norm", "true")
	refuseTimeStepLimit(r)
	r.Refuse("quantization_config")
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	m.headDim = headDim
	m.inner = int(expand * float64(m.hidden))
	if float64(m.inner) != expand*float64(m.hidden) {
		return nil, nil, fmt.Errorf("config.json: expand %v times hidden_size %d is not a whole inner size", expand, m.hidden)
	}
	if err := m.check(); err != nil {
		return nil, nil, err
	}
	// llama.cpp's mamba2 loader asserts (aborting the process) that the
	// inner size is twice the embedding length.
	if m.inner != 2*m.hidden {
		return nil, nil, fmt.Errorf("config.json: expand = %v; llama.cpp's mamba2 takes only expand = 2", expand)
	}
	// Hugging Face's Mamba2 normalises the gated output over the whole
	// inner dimension; llama.cpp normalises each group on its own (as
	// mamba_ssm does). They agree only with one group.
	if m.groups != 1 {
		return nil, nil, fmt.Errorf("config.json: n_groups = %d: Hugging Face's Mamba2 norms all groups together and llama.cpp each on its own, so only n_groups = 1 converts exactly", m.groups)
	}
	if err := refuseLayerTypes(cfg, "mamba"); err != nil {
		return nil, nil, err
	}
	tk := &Taker{W: w, Names: mamba2Names}
	take := tk.Named
	h, v := uint64(m.hidden), uint64(vocab)
	ts := []Tensor{take("backbone.embeddings.weight", v, h)}
	norm := take("backbone.norm_f.weight", h)
	norm.F32 = true
	ts = append(ts, norm)
	out, oerr := outputMatrix(w, tied, "lm_head.weight", "backbone.embeddings.weight", v, h)
	if oerr != nil {
		return nil, nil, oerr
	}
	if out != nil {
		ts = append(ts, *out)
	}
	for l := range layers {
		p := fmt.Sprintf("backbone.layers.%d.", l)
		n := take(p+"norm.weight", h)
		n.F32 = true
		ts = append(ts, n)
		ts = append(ts, m.tensors(tk, p+"mixer.", nil, nil)...)
	}
	if err := tk.Err(); err != nil {
		return nil, nil, err
	}
	kv := m.kv("mamba2")
	for k, val := range (KV{
		"mamba2.vocab_size":                       uint32(vocab),
		"mamba2.context_length":                   uint32(1 << 20), // no positions: any length
		"mamba2.embedding_length":                 uint32(m.hidden),
		"mamba2.block_count":                      uint32(layers),
		"mamba2.feed_forward_length":              uint32(0),
		"mamba2.attention.head_count":             uint32(0),
		"mamba2.attention.layer_norm_rms_epsilon": float32(eps),
	}) {
		kv[k] = val
	}
	return kv, ts, nil
}

// mamba2Names are Mamba-2's tensors.
var mamba2Names = merge(mixer2Names("backbone.layers.N.mixer."), tensorNames{
	"backbone.embeddings.weight":    "token_embd.weight",
	"backbone.norm_f.weight":        "output_norm.weight",
	"backbone.layers.N.norm.weight": "blk.N.attn_norm.weight",
})

// refuseLayerTypes refuses a layer_types list naming any layer but want.
func refuseLayerTypes(cfg Config, want string) error {
	var types []string
	if err := cfg.Get("layer_types", &types); err != nil {
		return err
	}
	for i, t := range types {
		if t != want {
			return fmt.Errorf("config.json: layer_types[%d] = %q; only %q layers are supported", i, t, want)
		}
	}
	return nil
}
