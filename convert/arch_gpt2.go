package convert

import "fmt"

// GPT2 converts GPT2LMHeadModel (OpenAI's GPT-2, nanoGPT and llm.c
// exports) to llama.cpp's gpt2: learned absolute positions, LayerNorms with
// biases, a fused q|k|v projection and gelu; the output matrix is the token
// embedding unless tie_word_embeddings is false.
var GPT2 = &Architecture{
	Classes: []string{"GPT2LMHeadModel"},
	GGUF:    "gpt2",
	Kind:    "transformer",
	Convert: convertGPT2,
}

// tanhGELU are transformers' names for GELU's tanh form, the one
// llama.cpp's gpt2 graph applies. Its gptneox graph applies the erf form
// ("gelu", Pythia's) in udgam-ci's build (scripts/engine.sh).
var tanhGELU = []string{`"gelu_new"`, `"gelu_pytorch_tanh"`, `"gelu_fast"`}

func convertGPT2(cfg Config, w Weights) (KV, []Tensor, error) {
	r := cfg.Reader()
	embd, heads, layers := r.Int("n_embd"), r.Int("n_head"), r.Int("n_layer")
	vocab, positions := r.Int("vocab_size"), r.Int("n_positions")
	inner := r.IntOr("n_inner", 4*embd)
	eps := r.FloatOr("layer_norm_epsilon", 1e-5)
	tied := r.BoolOr("tie_word_embeddings", true)
	r.Refuse("activation_function", tanhGELU...)
	r.Refuse("scale_attn_weights", "true")
	r.Refuse("scale_attn_by_inverse_layer_idx", "false")
	r.Refuse("add_cross_attention", "false")
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	if embd%heads != 0 {
		return nil, nil, fmt.Errorf("config.json: n_embd %d is not a multiple of n_head %d", embd, heads)
	}
	// transformers saves the names under "transformer."; OpenAI's own
	// checkpoints (openai-community/gpt2) have them bare.
	p := "transformer."
	if w.Shape(p+"wte.weight") == nil && w.Shape("wte.weight") != nil {
		p = ""
	}
	e, v, f := uint64(embd), uint64(vocab), uint64(inner)
	l := &tensorList{w: w, names: gpt2Names.under(p)}
	l.take(p+"wte.weight", v, e)
	l.take(p+"wpe.weight", uint64(positions), e)
	l.take(p+"ln_f.weight", e)
	l.take(p+"ln_f.bias", e)
	l.output(tied, false, "lm_head.weight", p+"wte.weight", v, e)
	for i := range layers {
		hf := fmt.Sprintf("%sh.%d.", p, i)
		l.take(hf+"ln_1.weight", e)
		l.take(hf+"ln_1.bias", e)
		// Conv1D keeps weights [in][out]; GGUF wants Linear's [out][in].
		l.transposed(hf+"attn.c_attn.weight", e, 3*e)
		l.take(hf+"attn.c_attn.bias", 3*e)
		l.transposed(hf+"attn.c_proj.weight", e, e)
		l.take(hf+"attn.c_proj.bias", e)
		l.take(hf+"ln_2.weight", e)
		l.take(hf+"ln_2.bias", e)
		l.transposed(hf+"mlp.c_fc.weight", e, f)
		l.take(hf+"mlp.c_fc.bias", f)
		l.transposed(hf+"mlp.c_proj.weight", f, e)
		l.take(hf+"mlp.c_proj.bias", e)
	}
	if l.err != nil {
		return nil, nil, l.err
	}
	kv := KV{
		"general.architecture":              "gpt2",
		"gpt2.context_length":               uint32(positions),
		"gpt2.embedding_length":             uint32(embd),
		"gpt2.feed_forward_length":          uint32(inner),
		"gpt2.block_count":                  uint32(layers),
		"gpt2.attention.head_count":         uint32(heads),
		"gpt2.attention.layer_norm_epsilon": float32(eps),
	}
	return kv, l.ts, nil
}

// gpt2Names are GPT-2's tensors as OpenAI's own checkpoints name them;
// transformers saves them under "transformer." (gpt2Names.under).
var gpt2Names = tensorNames{
	"wte.weight":             "token_embd.weight",
	"wpe.weight":             "position_embd.weight",
	"ln_f.weight":            "output_norm.weight",
	"ln_f.bias":              "output_norm.bias",
	"h.N.ln_1.weight":        "blk.N.attn_norm.weight",
	"h.N.ln_1.bias":          "blk.N.attn_norm.bias",
	"h.N.attn.c_attn.weight": "blk.N.attn_qkv.weight",
	"h.N.attn.c_attn.bias":   "blk.N.attn_qkv.bias",
	"h.N.attn.c_proj.weight": "blk.N.attn_output.weight",
	"h.N.attn.c_proj.bias":   "blk.N.attn_output.bias",
	"h.N.ln_2.weight":        "blk.N.ffn_norm.weight",
	"h.N.ln_2.bias":          "blk.N.ffn_norm.bias",
	"h.N.mlp.c_fc.weight":    "blk.N.ffn_up.weight",
	"h.N.mlp.c_fc.bias":      "blk.N.ffn_up.bias",
	"h.N.mlp.c_proj.weight":  "blk.N.ffn_down.weight",
	"h.N.mlp.c_proj.bias":    "blk.N.ffn_down.bias",
}

// tensorList gathers an architecture's output tensors, named by its
// table, and keeps the first error, so a converter lists every tensor in
// order and checks once.
type tensorList struct {
	w     Weights
	names tensorNames
	ts    []Tensor
	err   error
}

// take adds checkpoint tensor hf under its llama.cpp name, checking its
// shape.
func (l *tensorList) take(hf string, shape ...uint64) {
	l.add(hf, shape, nil)
}

// add is take with the values passed through fn when read.
func (l *tensorList) add(hf string, shape []uint64, fn func([]float32) ([]float32, error)) {
	if l.err != nil {
		return
	}
	name, err := l.names.gguf(hf)
	if err != nil {
		l.err = err
		return
	}
	l.addAs(hf, name, shape, fn)
}

// addAs is add under the GGUF name given.
func (l *tensorList) addAs(hf, name string, shape []uint64, fn func([]float32) ([]float32, error)) {
	if l.err != nil {
		return
	}
	t, err := Take(l.w, hf, name, shape...)
	if err != nil {
		l.err = err
		return
	}
	if fn != nil {
		t = t.Map(fn)
	}
	l.ts = append(l.ts, t)
}

// transposed adds a [rows][cols] checkpoint matrix as its [cols][rows]
// transpose.
func (l *tensorList) transposed(hf string, rows, cols uint64) {
	l.add(hf, []uint64{rows, cols}, func(v []float32) ([]float32, error) {
		out := make([]float32, len(v))
		for r := range rows {
			for c := range cols {
				out[c*rows+r] = v[r*cols+c]
			}
		}
		return out, nil
	})
	if l.err == nil {
		l.ts[len(l.ts)-1].Shape = []uint64{cols, rows}
	}
}

// output adds the output matrix (see outputMatrix). A tied model has none
// unless llama.cpp's architecture requires output.weight, which then holds
// the embeddings a second time.
func (l *tensorList) output(tied, required bool, head, embd string, shape ...uint64) {
	if l.err != nil {
		return
	}
	t, err := outputMatrix(l.w, tied, head, embd, shape...)
	switch {
	case err != nil:
		l.err = err
	case t != nil:
		l.ts = append(l.ts, *t)
	case required:
		l.addAs(embd, "output.weight", shape, nil)
	}
}
