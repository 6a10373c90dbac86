package convert

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// FalconH1 is FalconH1ForCausalLM (Falcon-H1 and Falcon-H1-Tiny): every
// layer runs grouped-query attention and a Mamba-2 mixer side by side on
// the same normed input and adds both to the residual, then a SwiGLU MLP.
// Its µP multipliers are folded into the weights, since llama.cpp's
// falcon-h1 graph has none of them.
var FalconH1 = &Architecture{
	Classes: []string{"FalconH1ForCausalLM"},
	GGUF:    "falcon-h1",
	Kind:    "hybrid",
	Convert: byShape(readFalconH1Config),
}

// FalconH1RopeTheta is rope_theta when config.json sets none.
const FalconH1RopeTheta = 1e4

// falconMults are Falcon-H1's multipliers, each where the Hugging Face
// modeling code applies it.
type falconMults struct {
	embedding, lmHead    float64    // embed_tokens output; logits
	attnIn, attnOut, key float64    // attention input (q, k, v); o_proj output; k_proj output
	ssmIn, ssmOut        float64    // mixer input; mixer output
	gate, down           float64    // mlp_multipliers: gate_proj output; down_proj output
	zxbcdt               [5]float64 // ssm_multipliers: in_proj rows z, x, B, C, dt
}

func readFalconMults(r *ConfigReader) falconMults {
	m := falconMults{
		embedding: r.FloatOr("embedding_multiplier", 1),
		lmHead:    r.FloatOr("lm_head_multiplier", 1),
		attnIn:    r.FloatOr("attention_in_multiplier", 1),
		attnOut:   r.FloatOr("attention_out_multiplier", 1),
		key:       r.FloatOr("key_multiplier", 1),
		ssmIn:     r.FloatOr("ssm_in_multiplier", 1),
		ssmOut:    r.FloatOr("ssm_out_multiplier", 1),
		gate:      1, down: 1,
		zxbcdt: [5]float64{1, 1, 1, 1, 1},
	}
	if raw := r.Raw("mlp_multipliers"); raw != nil {
		var v []float64
		if err := json.Unmarshal(raw, &v); err != nil || len(v) != 2 {
			r.Fail(fmt.Errorf("config.json: mlp_multipliers = %s; want [gate, down]", raw))
		} else {
			m.gate, m.down = v[0], v[1]
		}
	}
	if raw := r.Raw("ssm_multipliers"); raw != nil {
		var v []float64
		if err := json.Unmarshal(raw, &v); err != nil || len(v) != 5 {
			r.Fail(fmt.Errorf("config.json: ssm_multipliers = %s; want five values for z, x, B, C, dt", raw))
		} else {
			copy(m.zxbcdt[:], v)
		}
	}
	return m
}

// mup is the factor of each in_proj row: ssm_in_multiplier (the mixer's
// input is scaled before in_proj, which is the same as scaling every row)
// times the ssm_multipliers entry of the row's block.
func (f falconMults) mup(m mixer2) []float64 {
	gs := m.groups * m.state
	ends := []int{m.inner, 2 * m.inner, 2*m.inner + gs, 2*m.inner + 2*gs, m.projSize()}
	out := make([]float64, m.projSize())
	k := 0
	for i := range out {
		for i >= ends[k] {
			k++
		}
		out[i] = f.ssmIn * f.zxbcdt[k]
	}
	return out
}

// falconH1Config is what the converter takes from a Falcon-H1 config.json,
// read as FalconH1Config reads it and checked against llama.cpp's
// falcon-h1 graph.
type falconH1Config struct {
	hidden, ffn, layers, heads, kvHeads, headDim, vocab, context int
	eps, theta                                                   float64
	tied                                                         bool
	mults                                                        falconMults
	mixer                                                        mixer2
}

func readFalconH1Config(cfg Config, _ Weights) (falconH1Config, error) {
	r := cfg.Reader()
	c := falconH1Config{
		hidden:  r.Int("hidden_size"),
		ffn:     r.Int("intermediate_size"),
		layers:  r.Int("num_hidden_layers"),
		heads:   r.Int("num_attention_heads"),
		vocab:   r.Int("vocab_size"),
		context: r.IntOr("max_position_embeddings", 8192),
		eps:     r.FloatOr("rms_norm_eps", 1e-5),
		tied:    r.BoolOr("tie_word_embeddings", false),
		// FalconH1Config (transformers 5) has no rope_theta of its own:
		// absent, it is RotaryEmbeddingConfigMixin.default_theta, 1e4
		// (transformers 4 wrote 1e5 into every config it saved, so such
		// files say it).
		theta: r.FloatOr("rope_theta", FalconH1RopeTheta),
	}
	// Hugging Face's FalconH1Config tells an absent key from a null one:
	// absent takes the class default, null a value derived from others.
	c.kvHeads = r.IntOr("num_key_value_heads", absentOr(cfg, "num_key_value_heads", 8, c.heads))
	if raw := r.Raw("rope_parameters"); raw != nil {
		if t, ok := r.PlainRope("rope_parameters", raw); ok {
			c.theta = t
		}
	}
	c.mults = readFalconMults(r)
	c.mixer = readFalconMixer(cfg, r, c.hidden)
	r.Refuse("hidden_act", `"silu"`)
	r.Refuse("attention_bias", "false")  // llama.cpp's graph adds no attention bias
	r.Refuse("mlp_bias", "false")        // nor MLP biases scaled by the multipliers
	r.Refuse("mamba_proj_bias", "false") // nor an in_proj bias
	r.Refuse("projectors_bias", "false") // nor an out_proj bias
	r.Refuse("rope_scaling")
	r.Refuse("sliding_window")
	r.Refuse("quantization_config")
	refuseTimeStepLimit(r)
	if err := r.Err(); err != nil {
		return c, err
	}
	c.headDim = r.IntOr("head_dim", c.hidden/c.heads)
	m := &c.mixer
	switch dh := r.Raw("mamba_d_head"); {
	case dh == nil || string(dh) == `"auto"`:
		m.headDim = m.inner / m.heads
	default:
		m.headDim = r.IntOr("mamba_d_head", 0)
	}
	switch {
	case r.Err() != nil:
		return c, r.Err()
	case c.kvHeads <= 0 || c.heads%c.kvHeads != 0:
		return c, fmt.Errorf("config.json: num_key_value_heads %d does not divide num_attention_heads %d", c.kvHeads, c.heads)
	case c.headDim <= 0 || c.headDim%2 != 0:
		return c, fmt.Errorf("config.json: head_dim %d is not a positive even number (rope turns pairs)", c.headDim)
	case c.eps <= 0 || c.theta <= 0:
		return c, fmt.Errorf("config.json: rms_norm_eps %v and rope_theta %v must be positive", c.eps, c.theta)
	}
	if err := m.check(); err != nil {
		return c, err
	}
	if m.norm && m.inner%m.groups != 0 {
		return c, fmt.Errorf("config.json: mamba_n_groups %d does not divide mamba_d_ssm %d", m.groups, m.inner)
	}
	return c, nil
}

// readFalconMixer reads the Mamba-2 mixer's sizes (all but its head size,
// which needs the inner size checked first).
func readFalconMixer(cfg Config, r *ConfigReader, hidden int) mixer2 {
	m := mixer2{
		hidden: hidden,
		heads:  r.Int("mamba_n_heads"),
		state:  r.Int("mamba_d_state"),
		groups: r.IntOr("mamba_n_groups", 1),
		kernel: r.IntOr("mamba_d_conv", 4),
	}
	m.inner = r.IntOr("mamba_d_ssm", absentOr(cfg, "mamba_d_ssm", 1024, 0))
	if m.inner == 0 { // null: mamba_expand * hidden_size
		m.inner = r.IntOr("mamba_expand", 2) * hidden
	}
	m.convBias = r.BoolOr("mamba_conv_bias", true)
	// llama.cpp's falcon-h1 loader lets the conv bias be absent, but its
	// Mamba-2 layer adds it unconditionally: a null tensor, an abort in C.
	m.needBias = true
	m.norm = r.BoolOr("mamba_rms_norm", false)
	if m.norm {
		// The naive path of the Hugging Face code norms before gating when
		// this is true (its default), its fused CUDA path after; llama.cpp
		// gates first. Only an explicit false is one model.
		r.Refuse("mamba_norm_before_gate", "false")
		if !cfg.Has("mamba_norm_before_gate") {
			r.Fail(fmt.Errorf("config.json: mamba_rms_norm is true but mamba_norm_before_gate is absent (Hugging Face's default, true, is not what llama.cpp computes)"))
		}
	}
	return m
}

func (c falconH1Config) kv() KV {
	kv := c.mixer.kv("falcon-h1")
	for k, val := range (KV{
		"falcon-h1.vocab_size":                       uint32(c.vocab),
		"falcon-h1.context_length":                   uint32(c.context),
		"falcon-h1.embedding_length":                 uint32(c.hidden),
		"falcon-h1.block_count":                      uint32(c.layers),
		"falcon-h1.feed_forward_length":              uint32(c.ffn),
		"falcon-h1.attention.head_count":             uint32(c.heads),
		"falcon-h1.attention.head_count_kv":          uint32(c.kvHeads),
		"falcon-h1.attention.key_length":             uint32(c.headDim),
		"falcon-h1.attention.value_length":           uint32(c.headDim),
		"falcon-h1.attention.layer_norm_rms_epsilon": float32(c.eps),
		"falcon-h1.rope.freq_base":                   float32(c.theta),
	}) {
		kv[k] = val
	}
	return kv
}

func (c falconH1Config) tensors(w Weights) ([]Tensor, error) {
	tk := &Taker{W: w, Names: falconH1Names}
	take := tk.Named
	mults := c.mults
	h, v, ff := uint64(c.hidden), uint64(c.vocab), uint64(c.ffn)
	q, kvDim := uint64(c.heads*c.headDim), uint64(c.kvHeads*c.headDim)
	norm := func(hf string) Tensor {
		t := take(hf, h)
		t.F32 = true
		return t
	}
	embed := take("model.embed_tokens.weight", v, h)
	ts := []Tensor{embed.Map(scaleBy(mults.embedding)), norm("model.final_layernorm.weight")}
	// llama.cpp scales neither the embeddings nor the logits: the output
	// matrix carries lm_head_multiplier. Tied embeddings carry the other
	// multiplier in token_embd, so the output is written on its own.
	switch {
	case !c.tied:
		ts = append(ts, take("lm_head.weight", v, h).Map(scaleBy(mults.lmHead)))
	case w.Shape("lm_head.weight") != nil:
		return nil, fmt.Errorf("tie_word_embeddings is true but the checkpoint has its own lm_head.weight")
	case mults.lmHead != mults.embedding:
		out := embed
		out.Name = "output.weight"
		ts = append(ts, out.Map(scaleBy(mults.lmHead)))
	}
	mup := mults.mup(c.mixer)
	inProj := func(vals []float32) ([]float32, error) {
		cols := len(vals) / len(mup)
		out := make([]float32, len(vals))
		for row, f := range mup {
			for col := range cols {
				out[row*cols+col] = float32(float64(vals[row*cols+col]) * f)
			}
		}
		return out, nil
	}
	for l := range c.layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts,
			norm(p+"input_layernorm.weight"),
			take(p+"self_attn.q_proj.weight", q, h).Map(scaleBy(mults.attnIn)),
			take(p+"self_attn.k_proj.weight", kvDim, h).Map(scaleBy(mults.attnIn*mults.key)),
			take(p+"self_attn.v_proj.weight", kvDim, h).Map(scaleBy(mults.attnIn)),
			take(p+"self_attn.o_proj.weight", h, q).Map(scaleBy(mults.attnOut)),
			norm(p+"pre_ff_layernorm.weight"),
			take(p+"feed_forward.gate_proj.weight", ff, h).Map(scaleBy(mults.gate)),
			take(p+"feed_forward.up_proj.weight", ff, h),
			take(p+"feed_forward.down_proj.weight", h, ff).Map(scaleBy(mults.down)),
		)
		ts = append(ts, c.mixer.tensors(tk, p+"mamba.", inProj, scaleBy(mults.ssmOut))...)
		if name := p + "mamba.mup_vector"; w.Shape(name) != nil {
			if err := checkMupVector(w, name, mup, mults.ssmIn); err != nil {
				return nil, err
			}
		}
	}
	if err := tk.Err(); err != nil {
		return nil, err
	}
	return ts, nil
}

// falconH1Names are Falcon-H1's tensors: attention, MLP and a Mamba-2
// mixer side by side in each layer.
var falconH1Names = merge(mixer2Names("model.layers.N.mamba."), tensorNames{
	"model.embed_tokens.weight":              "token_embd.weight",
	"model.final_layernorm.weight":           "output_norm.weight",
	"lm_head.weight":                         "output.weight",
	"model.layers.N.input_layernorm.weight":  "blk.N.attn_norm.weight",
	"model.layers.N.self_attn.q_proj.weight": "blk.N.attn_q.weight",
	"model.layers.N.self_attn.k_proj.weight": "blk.N.attn_k.weight",
	"model.layers.N.self_attn.v_proj.weight": "blk.N.attn_v.weight",
	"model.layers.N.self_attn.o_proj.weight": "blk.N.attn_output.weight",
	// llama.cpp's falcon-h1 loader asks for this norm without the .weight
	// suffix.
	"model.layers.N.pre_ff_layernorm.weight":       "blk.N.ffn_norm",
	"model.layers.N.feed_forward.gate_proj.weight": "blk.N.ffn_gate.weight",
	"model.layers.N.feed_forward.up_proj.weight":   "blk.N.ffn_up.weight",
	"model.layers.N.feed_forward.down_proj.weight": "blk.N.ffn_down.weight",
})

// absentOr is absent when config.json lacks key, else null (for a key set
// to null; a key with a value is read as it is).
func absentOr(cfg Config, key string, absent, null int) int {
	if _, ok := cfg.raw[key]; !ok {
		return absent
	}
	return null
}

// checkMupVector reads a stored mup_vector (older checkpoints saved the
// buffer) and requires it to be the ssm_multipliers of config.json, which
// current Hugging Face code recomputes and uses instead: equal to the
// rounding of a bfloat16 file (2^-8 relative).
func checkMupVector(w Weights, name string, mup []float64, ssmIn float64) error {
	vals, err := w.Read(name)
	if err != nil {
		return err
	}
	if len(vals) != len(mup) {
		return fmt.Errorf("tensor %s has %d values; in_proj has %d rows", name, len(vals), len(mup))
	}
	want := slices.Clone(mup)
	for i, v := range vals {
		want[i] /= ssmIn
		if math.Abs(float64(v)-want[i]) > math.Abs(want[i])/256 {
			return fmt.Errorf("tensor %s[%d] = %v, but ssm_multipliers in config.json give %v", name, i, v, want[i])
		}
	}
	return nil
}
