package testmodel

import (
	"encoding/json"
	"fmt"
	"math"
)

// The state-space references below (Falcon-H1, Mamba-2, Mamba) read a
// Hugging Face checkpoint as its modeling code does: config.json parsed on
// its own (not by the converter), tensors by their Hugging Face names and
// shapes, every multiplier applied where the modeling code applies it, and
// every scan run token by token in float64. A converter that folds
// multipliers into weights, reorders rows or drops a tensor is checked
// against them.

// stateContext is the context of a model without positions: any length.
const stateContext = 1 << 20

// ssdMixer is one Mamba-2 mixer (state-space duality form): in_proj rows
// [z | x | B | C | dt], a causal depthwise conv over x|B|C, then per head a
// scalar-decay scan. Falcon-H1 and Mamba2 share it.
type ssdMixer struct {
	inner, heads, headDim, state, groups, kernel int
	eps                                          float64

	inProj, convW, convB, dtBias, aLog, d, norm, outProj []float32
	// groupedNorm: the gated RMS norm runs over each of the n_groups parts
	// of the inner dimension (Falcon-H1, mamba_ssm); otherwise over all of
	// it. norm nil: no norm, only the gate.
	groupedNorm bool
	// mup scales each in_proj output row (Falcon-H1's ssm_multipliers);
	// nil for none. inScale scales the mixer's input.
	mup     []float64
	inScale float64
}

func (s *ssdMixer) convDim() int  { return s.inner + 2*s.groups*s.state }
func (s *ssdMixer) projSize() int { return s.inner + s.convDim() + s.heads }

// load reads the mixer's tensors under prefix (…mamba. or …mixer.).
func (s *ssdMixer) load(t *weightReader, prefix string, hidden int, convBias, norm bool) {
	cd := s.convDim()
	s.inProj = t.get(prefix+"in_proj.weight", s.projSize()*hidden)
	s.convW = t.get(prefix+"conv1d.weight", cd*s.kernel) // [conv_dim, 1, kernel]
	if convBias {
		s.convB = t.get(prefix+"conv1d.bias", cd)
	}
	s.dtBias = t.get(prefix+"dt_bias", s.heads)
	s.aLog = t.get(prefix+"A_log", s.heads)
	s.d = t.get(prefix+"D", s.heads)
	if norm {
		s.norm = t.get(prefix+"norm.weight", s.inner)
	}
	s.outProj = t.get(prefix+"out_proj.weight", hidden*s.inner)
}

// run returns the mixer's output for each of the inputs u[0..n-1] of one
// sequence, starting from zero conv and scan states.
func (s *ssdMixer) run(u [][]float64, hidden int) [][]float64 {
	n, cd := len(u), s.convDim()
	proj := newRows(n, s.projSize())
	in := make([]float64, hidden)
	for t := range n {
		for i, v := range u[t] {
			in[i] = v * s.inScale
		}
		matVec(proj[t], s.inProj, in)
		for i, m := range s.mup {
			proj[t][i] *= m
		}
	}
	conv := newRows(n, cd)
	for t := range n {
		causalConvSilu(conv[t], proj[:t+1], s.inner, s.convW, s.convB, s.kernel)
	}
	state := make([]float64, s.heads*s.headDim*s.state)
	y := make([]float64, s.inner)
	out := newRows(n, hidden)
	perGroup := s.heads / s.groups
	for t := range n {
		x := conv[t][:s.inner]
		B := conv[t][s.inner : s.inner+s.groups*s.state]
		C := conv[t][s.inner+s.groups*s.state:]
		for h := range s.heads {
			dt := refSoftplus(proj[t][s.inner+cd+h] + float64(s.dtBias[h]))
			decay := math.Exp(-dt * math.Exp(float64(s.aLog[h]))) // exp(dt * A), A = -exp(A_log)
			g := h / perGroup
			bg, cg := B[g*s.state:(g+1)*s.state], C[g*s.state:(g+1)*s.state]
			for p := range s.headDim {
				xi := x[h*s.headDim+p]
				st := state[(h*s.headDim+p)*s.state : (h*s.headDim+p+1)*s.state]
				var sum float64
				for j := range st {
					st[j] = st[j]*decay + dt*bg[j]*xi
					sum += st[j] * cg[j]
				}
				y[h*s.headDim+p] = sum + float64(s.d[h])*xi
			}
		}
		// Gate, then (optionally) the gated RMS norm.
		for i := range y {
			y[i] *= silu(proj[t][i])
		}
		if s.norm != nil {
			parts := 1
			if s.groupedNorm {
				parts = s.groups
			}
			w := s.inner / parts
			for g := range parts {
				rmsNorm(y[g*w:(g+1)*w], y[g*w:(g+1)*w], s.norm[g*w:(g+1)*w], s.eps)
			}
		}
		matVec(out[t], s.outProj, y)
	}
	return out
}

// FalconH1Reference is FalconH1ForCausalLM: each layer runs attention and a
// Mamba-2 mixer side by side on the same normed input, adds both to the
// residual, then a SwiGLU MLP; with every µP multiplier of config.json.
func FalconH1Reference(config []byte, w map[string][]float32) (*Reference, error) {
	// Absent keys take FalconH1Config's defaults (transformers 5.19),
	// written here apart from the converter's so that a misread default
	// shows as a difference.
	c := struct {
		Vocab      int      `json:"vocab_size"`
		Context    int      `json:"max_position_embeddings"`
		Hidden     int      `json:"hidden_size"`
		FFN        int      `json:"intermediate_size"`
		Layers     int      `json:"num_hidden_layers"`
		Heads      int      `json:"num_attention_heads"`
		KVHeads    *int     `json:"num_key_value_heads"`
		HeadDim    *int     `json:"head_dim"`
		Eps        float64  `json:"rms_norm_eps"`
		RopeTheta  *float64 `json:"rope_theta"`
		RopeParams *struct {
			RopeTheta *float64 `json:"rope_theta"`
		} `json:"rope_parameters"`
		Tied        bool            `json:"tie_word_embeddings"`
		DSSM        *int            `json:"mamba_d_ssm"`
		Expand      int             `json:"mamba_expand"`
		SSMHeads    int             `json:"mamba_n_heads"`
		SSMHeadDim  json.RawMessage `json:"mamba_d_head"`
		State       int             `json:"mamba_d_state"`
		Groups      int             `json:"mamba_n_groups"`
		Kernel      int             `json:"mamba_d_conv"`
		ConvBias    *bool           `json:"mamba_conv_bias"`
		RMSNorm     bool            `json:"mamba_rms_norm"`
		EmbMult     *float64        `json:"embedding_multiplier"`
		LMHeadMult  *float64        `json:"lm_head_multiplier"`
		AttnInMult  *float64        `json:"attention_in_multiplier"`
		AttnOutMult *float64        `json:"attention_out_multiplier"`
		KeyMult     *float64        `json:"key_multiplier"`
		SSMInMult   *float64        `json:"ssm_in_multiplier"`
		SSMOutMult  *float64        `json:"ssm_out_multiplier"`
		MLPMults    []float64       `json:"mlp_multipliers"`
		SSMMults    []float64       `json:"ssm_multipliers"`
	}{Vocab: 128000, Context: 8192, Hidden: 4096, FFN: 14336, Layers: 32, Heads: 32, Eps: 1e-5,
		Expand: 2, SSMHeads: 128, State: 256, Groups: 1, Kernel: 4}
	if err := parseConfig(config, &c); err != nil {
		return nil, err
	}
	var keys map[string]json.RawMessage
	if err := parseConfig(config, &keys); err != nil {
		return nil, err
	}
	// An absent key takes the class default, a null one a value derived
	// from others.
	orDefault := func(p *int, key string, absent, null int) int {
		switch _, ok := keys[key]; {
		case p != nil:
			return *p
		case ok:
			return null
		}
		return absent
	}
	kvHeads := orDefault(c.KVHeads, "num_key_value_heads", 8, c.Heads)
	inner := orDefault(c.DSSM, "mamba_d_ssm", 1024, c.Expand*c.Hidden)
	one := func(p *float64) float64 {
		if p == nil {
			return 1
		}
		return *p
	}
	// rope_parameters' own base wins, then rope_theta, then the default.
	theta := 1e4
	if c.RopeTheta != nil {
		theta = *c.RopeTheta
	}
	if c.RopeParams != nil && c.RopeParams.RopeTheta != nil {
		theta = *c.RopeParams.RopeTheta
	}
	if c.Heads <= 0 || c.SSMHeads <= 0 {
		return nil, fmt.Errorf("reference: config.json: malformed Falcon-H1 options")
	}
	hd := c.Hidden / c.Heads
	if c.HeadDim != nil {
		hd = *c.HeadDim
	}
	ssmHeadDim := inner / c.SSMHeads // "auto", absent or null
	if len(c.SSMHeadDim) > 0 && string(c.SSMHeadDim) != "null" && string(c.SSMHeadDim) != `"auto"` {
		if err := json.Unmarshal(c.SSMHeadDim, &ssmHeadDim); err != nil {
			return nil, fmt.Errorf("reference: config.json: mamba_d_head: %w", err)
		}
	}
	mlp := []float64{1, 1}
	if c.MLPMults != nil {
		mlp = c.MLPMults
	}
	mups := []float64{1, 1, 1, 1, 1}
	if c.SSMMults != nil {
		mups = c.SSMMults
	}
	if len(mlp) != 2 || len(mups) != 5 || kvHeads <= 0 || c.Groups <= 0 {
		return nil, fmt.Errorf("reference: config.json: malformed Falcon-H1 options")
	}
	h := c.Hidden
	mix := ssdMixer{inner: inner, heads: c.SSMHeads, headDim: ssmHeadDim, state: c.State,
		groups: c.Groups, kernel: c.Kernel, eps: c.Eps, groupedNorm: true, inScale: one(c.SSMInMult)}
	// mup: ssm_multipliers over the in_proj rows z, x, B, C, dt.
	gs := c.Groups * c.State
	bounds := []int{inner, 2 * inner, 2*inner + gs, 2*inner + 2*gs, mix.projSize()}
	mix.mup = make([]float64, mix.projSize())
	for i := range mix.mup {
		k := 0
		for i >= bounds[k] {
			k++
		}
		mix.mup[i] = mups[k]
	}
	t := &weightReader{w: w}
	embed := t.get("model.embed_tokens.weight", c.Vocab*h)
	final := t.get("model.final_layernorm.weight", h)
	lmHead := embed
	if !c.Tied || t.w["lm_head.weight"] != nil {
		lmHead = t.get("lm_head.weight", c.Vocab*h)
	}
	type layer struct {
		inNorm, ffNorm, q, k, v, o, gate, up, down []float32
		mix                                        ssdMixer
	}
	layers := make([]layer, c.Layers)
	for l := range layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		L := &layers[l]
		L.inNorm = t.get(p+"input_layernorm.weight", h)
		L.ffNorm = t.get(p+"pre_ff_layernorm.weight", h)
		L.q = t.get(p+"self_attn.q_proj.weight", c.Heads*hd*h)
		L.k = t.get(p+"self_attn.k_proj.weight", kvHeads*hd*h)
		L.v = t.get(p+"self_attn.v_proj.weight", kvHeads*hd*h)
		L.o = t.get(p+"self_attn.o_proj.weight", h*c.Heads*hd)
		L.gate = t.get(p+"feed_forward.gate_proj.weight", c.FFN*h)
		L.up = t.get(p+"feed_forward.up_proj.weight", c.FFN*h)
		L.down = t.get(p+"feed_forward.down_proj.weight", h*c.FFN)
		L.mix = mix
		L.mix.load(t, p+"mamba.", h, c.ConvBias == nil || *c.ConvBias, c.RMSNorm)
	}
	if t.err != nil {
		return nil, t.err
	}
	embMult, lmMult := one(c.EmbMult), one(c.LMHeadMult)
	attnIn, attnOut, keyMult, ssmOut := one(c.AttnInMult), one(c.AttnOutMult), one(c.KeyMult), one(c.SSMOutMult)
	forward := func(seq []int32, n int) [][]float64 {
		x := embedRows(embed, seq, n, h)
		for t := range x {
			for i := range x[t] {
				x[t][i] *= embMult
			}
		}
		normed := newRows(n, h)
		scaled := newRows(n, h)
		q, k, v := newRows(n, c.Heads*hd), newRows(n, kvHeads*hd), newRows(n, kvHeads*hd)
		attnOutRow := make([]float64, h)
		gate, up := make([]float64, c.FFN), make([]float64, c.FFN)
		delta := make([]float64, h)
		for _, L := range layers {
			for t := range n {
				rmsNorm(normed[t], x[t], L.inNorm, c.Eps)
				for i, v := range normed[t] {
					scaled[t][i] = v * attnIn
				}
				matVec(q[t], L.q, scaled[t])
				matVec(k[t], L.k, scaled[t])
				matVec(v[t], L.v, scaled[t])
				for i := range k[t] {
					k[t][i] *= keyMult
				}
				RotateHalf(q[t], hd, hd, t, theta)
				RotateHalf(k[t], hd, hd, t, theta)
			}
			attn := attendAll(q, k, v, c.Heads, kvHeads)
			ssm := L.mix.run(normed, h)
			for t := range n {
				matVec(attnOutRow, L.o, attn[t])
				for i := range x[t] {
					x[t][i] += attnOutRow[i]*attnOut + ssm[t][i]*ssmOut
				}
				rmsNorm(normed[t], x[t], L.ffNorm, c.Eps)
				matVec(gate, L.gate, normed[t])
				matVec(up, L.up, normed[t])
				for i := range gate {
					gate[i] = silu(gate[i]*mlp[0]) * up[i]
				}
				matVec(delta, L.down, gate)
				for i := range x[t] {
					x[t][i] += delta[i] * mlp[1]
				}
			}
		}
		for t := range n {
			rmsNorm(x[t], x[t], final, c.Eps)
		}
		return x
	}
	logits := func(dst, hs []float64) {
		matVec(dst, lmHead, hs)
		for i := range dst {
			dst[i] *= lmMult
		}
	}
	return wholeSequence(c.Vocab, c.Context, forward, logits), nil
}

// Mamba2Reference is Mamba2ForCausalLM: pre-norm residual blocks of one
// Mamba-2 mixer each, its gated RMS norm over the whole inner dimension.
func Mamba2Reference(config []byte, w map[string][]float32) (*Reference, error) {
	var c struct {
		Vocab    int     `json:"vocab_size"`
		Hidden   int     `json:"hidden_size"`
		Layers   int     `json:"num_hidden_layers"`
		Expand   float64 `json:"expand"`
		Heads    int     `json:"num_heads"`
		HeadDim  int     `json:"head_dim"`
		State    int     `json:"state_size"`
		Groups   *int    `json:"n_groups"`
		Kernel   int     `json:"conv_kernel"`
		Eps      float64 `json:"layer_norm_epsilon"`
		ConvBias *bool   `json:"use_conv_bias"`
		Tied     *bool   `json:"tie_word_embeddings"`
	}
	if err := parseConfig(config, &c); err != nil {
		return nil, err
	}
	h := c.Hidden
	inner := int(c.Expand * float64(h))
	groups := 8 // Hugging Face's default
	if c.Groups != nil {
		groups = *c.Groups
	}
	if c.Heads == 0 || groups == 0 || c.Heads*c.HeadDim != inner {
		return nil, fmt.Errorf("reference: config.json: malformed Mamba-2 options")
	}
	t := &weightReader{w: w}
	embed := t.get("backbone.embeddings.weight", c.Vocab*h)
	final := t.get("backbone.norm_f.weight", h)
	lmHead := embed
	if c.Tied == nil || !*c.Tied { // Hugging Face's default: untied

		lmHead = t.get("lm_head.weight", c.Vocab*h)
	}
	norms := make([][]float32, c.Layers)
	mixers := make([]ssdMixer, c.Layers)
	for l := range mixers {
		p := fmt.Sprintf("backbone.layers.%d.", l)
		norms[l] = t.get(p+"norm.weight", h)
		mixers[l] = ssdMixer{inner: inner, heads: c.Heads, headDim: c.HeadDim, state: c.State,
			groups: groups, kernel: c.Kernel, eps: c.Eps, inScale: 1}
		mixers[l].load(t, p+"mixer.", h, c.ConvBias == nil || *c.ConvBias, true)
	}
	if t.err != nil {
		return nil, t.err
	}
	forward := func(seq []int32, n int) [][]float64 {
		x := embedRows(embed, seq, n, h)
		normed := newRows(n, h)
		for l, m := range mixers {
			for t := range n {
				rmsNorm(normed[t], x[t], norms[l], c.Eps)
			}
			for t, d := range m.run(normed, h) {
				addTo(x[t], d)
			}
		}
		for t := range n {
			rmsNorm(x[t], x[t], final, c.Eps)
		}
		return x
	}
	return wholeSequence(c.Vocab, stateContext, forward, func(dst, hs []float64) { matVec(dst, lmHead, hs) }), nil
}

// MambaReference is MambaForCausalLM (Mamba-1): per channel a selective
// scan with a decay per (channel, state) pair, dt from a low-rank
// projection.
func MambaReference(config []byte, w map[string][]float32) (*Reference, error) {
	var c struct {
		Vocab    int             `json:"vocab_size"`
		Hidden   int             `json:"hidden_size"`
		Inner    int             `json:"intermediate_size"`
		Layers   int             `json:"num_hidden_layers"`
		State    int             `json:"state_size"`
		Kernel   int             `json:"conv_kernel"`
		Rank     json.RawMessage `json:"time_step_rank"`
		Eps      float64         `json:"layer_norm_epsilon"`
		ConvBias *bool           `json:"use_conv_bias"`
		Tied     *bool           `json:"tie_word_embeddings"`
	}
	if err := parseConfig(config, &c); err != nil {
		return nil, err
	}
	h, di, ds := c.Hidden, c.Inner, c.State
	rank := (h + 15) / 16 // "auto": ceil(hidden / 16)
	if len(c.Rank) > 0 && string(c.Rank) != `"auto"` {
		if err := json.Unmarshal(c.Rank, &rank); err != nil {
			return nil, fmt.Errorf("reference: config.json: time_step_rank: %w", err)
		}
	}
	t := &weightReader{w: w}
	embed := t.get("backbone.embeddings.weight", c.Vocab*h)
	final := t.get("backbone.norm_f.weight", h)
	lmHead := embed
	if (c.Tied != nil && !*c.Tied) || t.w["lm_head.weight"] != nil {
		lmHead = t.get("lm_head.weight", c.Vocab*h)
	}
	type layer struct{ norm, inProj, convW, convB, xProj, dtW, dtB, aLog, d, outProj []float32 }
	layers := make([]layer, c.Layers)
	for l := range layers {
		p := fmt.Sprintf("backbone.layers.%d.", l)
		L := &layers[l]
		L.norm = t.get(p+"norm.weight", h)
		L.inProj = t.get(p+"mixer.in_proj.weight", 2*di*h)
		L.convW = t.get(p+"mixer.conv1d.weight", di*c.Kernel)
		if c.ConvBias == nil || *c.ConvBias {
			L.convB = t.get(p+"mixer.conv1d.bias", di)
		}
		L.xProj = t.get(p+"mixer.x_proj.weight", (rank+2*ds)*di)
		L.dtW = t.get(p+"mixer.dt_proj.weight", di*rank)
		L.dtB = t.get(p+"mixer.dt_proj.bias", di)
		L.aLog = t.get(p+"mixer.A_log", di*ds)
		L.d = t.get(p+"mixer.D", di)
		L.outProj = t.get(p+"mixer.out_proj.weight", h*di)
	}
	if t.err != nil {
		return nil, t.err
	}
	forward := func(seq []int32, n int) [][]float64 {
		x := embedRows(embed, seq, n, h)
		normed := make([]float64, h)
		xz := newRows(n, 2*di)
		u := make([]float64, di)
		xdb := make([]float64, rank+2*ds)
		dt := make([]float64, di)
		y := make([]float64, di)
		out := make([]float64, h)
		state := make([]float64, di*ds)
		for _, L := range layers {
			for t := range n {
				rmsNorm(normed, x[t], L.norm, c.Eps)
				matVec(xz[t], L.inProj, normed)
			}
			clear(state)
			for t := range n {
				causalConvSilu(u, xz[:t+1], 0, L.convW, L.convB, c.Kernel)
				matVec(xdb, L.xProj, u)
				matVec(dt, L.dtW, xdb[:rank])
				B, C := xdb[rank:rank+ds], xdb[rank+ds:]
				for ch := range di {
					d := refSoftplus(dt[ch] + float64(L.dtB[ch]))
					st := state[ch*ds : (ch+1)*ds]
					var sum float64
					for j := range st {
						a := -math.Exp(float64(L.aLog[ch*ds+j]))
						st[j] = st[j]*math.Exp(d*a) + d*B[j]*u[ch]
						sum += st[j] * C[j]
					}
					y[ch] = (sum + float64(L.d[ch])*u[ch]) * silu(xz[t][di+ch])
				}
				matVec(out, L.outProj, y)
				addTo(x[t], out)
			}
		}
		for t := range n {
			rmsNorm(x[t], x[t], final, c.Eps)
		}
		return x
	}
	return wholeSequence(c.Vocab, stateContext, forward, func(dst, hs []float64) { matVec(dst, lmHead, hs) }), nil
}

// causalConvSilu sets dst[c] to silu of the causal depthwise convolution
// of channel c at the last of the inputs rows (channel c of a row is
// row[off+c]): kernel weights w[c*kernel .. (c+1)*kernel) over the last
// kernel rows, missing ones before the sequence zero, plus b[c] (b may be
// nil).
func causalConvSilu(dst []float64, rows [][]float64, off int, w, b []float32, kernel int) {
	t := len(rows) - 1
	for c := range dst {
		var sum float64
		if b != nil {
			sum = float64(b[c])
		}
		for k := range kernel {
			if src := t - kernel + 1 + k; src >= 0 {
				sum += float64(w[c*kernel+k]) * rows[src][off+c]
			}
		}
		dst[c] = silu(sum)
	}
}

// refSoftplus is PyTorch's softplus (beta 1, threshold 20).
func refSoftplus(x float64) float64 {
	if x > 20 {
		return x
	}
	return math.Log1p(math.Exp(x))
}
