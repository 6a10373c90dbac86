package testmodel

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/x448/float16"
)

// weightReader takes a checkpoint's tensors (by Hugging Face name, each
// row-major in the checkpoint's own shape: torch.nn.Linear is [out][in],
// GPT-2's Conv1D [in][out]) and keeps the first error, so a reference reads
// all it needs and checks once. The references read them as transformers'
// modeling code does, not as any GGUF stores them, so that a converter's
// renaming, transposing and reordering is checked too.
type weightReader struct {
	w   map[string][]float32
	err error
}

// get returns a tensor that must be there with n values.
func (r *weightReader) get(name string, n int) []float32 {
	v, ok := r.w[name]
	switch {
	case r.err != nil:
	case !ok:
		r.err = fmt.Errorf("reference: checkpoint has no tensor %s", name)
	case len(v) != n:
		r.err = fmt.Errorf("reference: tensor %s has %d values, want %d", name, len(v), n)
	}
	return v
}

// wholeSequence is a Reference over a forward pass of whole sequences:
// forward returns the hidden states of tokens 0..n-1 after the final norm,
// and logits turns one into next-token logits.
func wholeSequence(vocab, context int, forward func(seq []int32, n int) [][]float64, logits func(dst, h []float64)) *Reference {
	return &Reference{Vocab: vocab, Context: context, LogProbs: func(seq []int32, positions []int) []float64 {
		last := lastPosition(positions)
		h := forward(seq, last) // states of tokens 0..last-1 predict 1..last
		row := make([]float64, vocab)
		out := make([]float64, len(positions))
		for i, p := range positions {
			logits(row, h[p-1])
			out[i] = LogSoftmaxAt(row, seq[p])
		}
		return out
	}}
}

// parseConfig decodes config.json into v, the fields a reference reads.
func parseConfig(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("reference: config.json: %w", err)
	}
	return nil
}

// layerNorm sets dst to (x - mean) / sqrt(var + eps) * w + b; nil w and b
// are the non-parametric LayerNorm (OLMo).
func layerNorm(dst, x []float64, w, b []float32, eps float64) {
	var mean float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	var variance float64
	for _, v := range x {
		variance += (v - mean) * (v - mean)
	}
	f := 1 / math.Sqrt(variance/float64(len(x))+eps)
	for i, v := range x {
		y := (v - mean) * f
		if w != nil {
			y = y*float64(w[i]) + float64(b[i])
		}
		dst[i] = y
	}
}

// conv1d sets dst = x W + b for GPT-2's Conv1D, W stored [len(x)][len(dst)].
func conv1d(dst []float64, w []float32, b []float32, x []float64) {
	out := len(dst)
	for o := range dst {
		dst[o] = float64(b[o])
	}
	for i, xi := range x {
		row := w[i*out : (i+1)*out]
		for o, v := range row {
			dst[o] += xi * float64(v)
		}
	}
}

// RefOption changes how a reference model computes.
type RefOption func(*refOptions)

type refOptions struct{ ggmlGELU, ggmlRope bool }

func newRefOptions(opts []RefOption) refOptions {
	var o refOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithGGMLGELU computes GELU as stock ggml's CPU kernel does (udgam-ci's
// build does not: scripts/engine.sh): it looks the tanh GELU up in a
// table of float16 values, so its input and its output are rounded to
// float16 (a relative error of up to 2^-11 each), except beyond |x| >= 10.
// It shows how far that engine would be from the exact one.
func WithGGMLGELU() RefOption { return func(o *refOptions) { o.ggmlGELU = true } }

// WithGGMLRope turns the rotary embedding by angles taken as stock ggml's
// CPU rope takes them (udgam-ci's build does not: scripts/engine.sh): the
// angle of pair i is the float32 position times float32(base^(-2/rot)),
// multiplied on in float32 once per pair, and its cos and sin are rounded
// to float32. It shows how far that engine would be from the exact one.
func WithGGMLRope() RefOption { return func(o *refOptions) { o.ggmlRope = true } }

// gelu returns the activation function act names in transformers
// (ACT2FN), computed as the options say.
func (o refOptions) gelu(act string) func(float64) float64 {
	f := map[string]func(float64) float64{"gelu_new": runner.GELUTanh, "gelu_pytorch_tanh": runner.GELUTanh, "gelu_fast": runner.GELUTanh, "gelu": runner.GELUErf}[act]
	if f == nil || !o.ggmlGELU {
		return f
	}
	// ggml computes the tanh form whatever the checkpoint asked for.
	return func(x float64) float64 {
		if x <= -10 || x >= 10 {
			return runner.GELUTanh(x)
		}
		in := float64(float16.Fromfloat32(float32(x)).Float32())
		return float64(float16.Fromfloat32(float32(runner.GELUTanh(in))).Float32())
	}
}

func silu(x float64) float64 { return x / (1 + math.Exp(-x)) }

// attendAll returns causalAttention's output for every token of q, each
// over the keys and values of tokens 0..t.
func attendAll(q, k, v [][]float64, heads, kvHeads int) [][]float64 {
	out := newRows(len(q), len(q[0]))
	scores := make([]float64, len(q))
	for t := range q {
		causalAttention(out[t], q[t], k[:t+1], v[:t+1], heads, kvHeads, scores)
	}
	return out
}

// embedRows returns the embedding rows of seq[:n].
func embedRows(emb []float32, seq []int32, n, width int) [][]float64 {
	x := make([][]float64, n)
	for t := range n {
		x[t] = make([]float64, width)
		row := emb[int(seq[t])*width:]
		for i := range x[t] {
			x[t][i] = float64(row[i])
		}
	}
	return x
}

func newRows(n, width int) [][]float64 {
	x := make([][]float64, n)
	for t := range x {
		x[t] = make([]float64, width)
	}
	return x
}
