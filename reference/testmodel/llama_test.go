package testmodel

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/udgamlabs/udgam-ci/runner"
)

func newTestLlama(t *testing.T, seed int64) *Llama {
	t.Helper()
	m, err := RandomLlama(seed, DefaultShape())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// scoreAll returns log p(seq[p] | seq[:p]) for p = 1..len(seq)-1.
func scoreAll(t *testing.T, m runner.Model, seq []int32) []float64 {
	t.Helper()
	positions := make([]int, 0, len(seq)-1)
	for p := 1; p < len(seq); p++ {
		positions = append(positions, p)
	}
	res, err := m.Score(context.Background(), []runner.Request{{Branches: []runner.Branch{{Tokens: seq, Positions: positions}}}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0][0]
}

func textSeq(s string) []int32 { return append([]int32{BOS}, byteTokens(s)...) }

func TestLlamaIsCausal(t *testing.T) {
	t.Parallel()
	m := newTestLlama(t, 1)
	a := textSeq("the quick brown fox")
	b := slices.Clone(a)
	b[len(b)-1] = 'z' // the last token is only ever a target
	c := slices.Clone(a)
	c[len(c)-3] = 'q'
	la, lb, lc := scoreAll(t, m, a), scoreAll(t, m, b), scoreAll(t, m, c)
	for p := 1; p < len(a)-1; p++ {
		if la[p-1] != lb[p-1] {
			t.Errorf("position %d: changing the last token changed %v to %v", p, la[p-1], lb[p-1])
		}
	}
	if la[len(la)-1] == lb[len(lb)-1] {
		t.Error("the last position ignored its own target")
	}
	for p := 1; p < len(a)-3; p++ {
		if la[p-1] != lc[p-1] {
			t.Errorf("position %d: changing token %d changed %v to %v", p, len(a)-3, la[p-1], lc[p-1])
		}
	}
}

// A bigram model would give the same last log-probability whatever came
// before the previous token; this model must not.
func TestLlamaAttentionMatters(t *testing.T) {
	t.Parallel()
	m := newTestLlama(t, 2)
	a := textSeq("abcdefgh")
	b := slices.Clone(a)
	b[1] = 'x'
	la, lb := scoreAll(t, m, a), scoreAll(t, m, b)
	if d := math.Abs(la[len(la)-1] - lb[len(lb)-1]); d < 1e-3 {
		t.Errorf("changing the first byte moved the last log-probability by only %g", d)
	}
}

func TestLlamaNextTokenDistributionSumsToOne(t *testing.T) {
	t.Parallel()
	for _, shape := range []Shape{DefaultShape(), {Layers: 1, Embd: 32, Heads: 4, KVHeads: 4, FFN: 40, Vocab: 300, Context: 32, TiedOutput: true}} {
		t.Run(fmt.Sprintf("vocab%d", shape.Vocab), func(t *testing.T) {
			m, err := RandomLlama(3, shape)
			if err != nil {
				t.Fatal(err)
			}
			prefix := textSeq("hello")
			req := runner.Request{Prefix: prefix}
			for tok := range int32(shape.Vocab) {
				req.Branches = append(req.Branches, runner.Branch{Tokens: []int32{tok}, Positions: []int{len(prefix)}})
			}
			res, err := m.Score(context.Background(), []runner.Request{req})
			if err != nil {
				t.Fatal(err)
			}
			var sum float64
			for _, lp := range res[0] {
				sum += math.Exp(lp[0])
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("next-token probabilities sum to %v", sum)
			}
		})
	}
}

func TestLlamaPrefixBranchesEqualWholeSequences(t *testing.T) {
	t.Parallel()
	m := newTestLlama(t, 4)
	prefix := textSeq("Q: 2+2=")
	answers := []string{"4", "five", "22"}
	req := runner.Request{Prefix: prefix}
	for _, a := range answers {
		req.Branches = append(req.Branches, runner.Branch{Tokens: byteTokens(a), Positions: []int{len(prefix), 3}})
	}
	res, err := m.Score(context.Background(), []runner.Request{req})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range answers {
		whole := scoreAll(t, m, append(slices.Clone(prefix), byteTokens(a)...))
		if want := []float64{whole[len(prefix)-1], whole[2]}; !slices.Equal(res[0][i], want) {
			t.Errorf("branch %q: %v, whole sequence gives %v", a, res[0][i], want)
		}
	}
}

func TestLlamaSeedDeterminesWeights(t *testing.T) {
	t.Parallel()
	seq := textSeq("same seed")
	a, b, c := scoreAll(t, newTestLlama(t, 9), seq), scoreAll(t, newTestLlama(t, 9), seq), scoreAll(t, newTestLlama(t, 10), seq)
	if !slices.Equal(a, b) {
		t.Error("the same seed gave different log-probabilities")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds gave the same log-probabilities")
	}
}

func TestLlamaRejectsBadInput(t *testing.T) {
	t.Parallel()
	m := newTestLlama(t, 1)
	tests := []struct {
		name string
		req  runner.Request
		want string
	}{
		{"position", runner.Request{Branches: []runner.Branch{{Tokens: textSeq("ab"), Positions: []int{3}}}}, "position 3"},
		{"token", runner.Request{Branches: []runner.Branch{{Tokens: []int32{BOS, 257}, Positions: []int{1}}}}, "token id 257"},
		{"context", runner.Request{Branches: []runner.Branch{{Tokens: make([]int32, 513), Positions: []int{1}}}}, "context length 512"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Score(context.Background(), []runner.Request{tt.req})
			if err == nil || !strings.Contains(err.Error(), "request 0 branch 0") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error naming request 0 branch 0 and %q", err, tt.want)
			}
		})
	}
}

func TestShapeValidation(t *testing.T) {
	t.Parallel()
	good := DefaultShape()
	tests := []struct {
		name   string
		change func(*Shape)
	}{
		{"heads do not divide embd", func(s *Shape) { s.Heads = 3 }},
		{"odd head size", func(s *Shape) { s.Embd = 36; s.Heads = 4 }},
		{"kv heads do not divide heads", func(s *Shape) { s.KVHeads = 3 }},
		{"vocab too small", func(s *Shape) { s.Vocab = 256 }},
		{"no layers", func(s *Shape) { s.Layers = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good
			tt.change(&s)
			if _, err := RandomLlama(1, s); err == nil {
				t.Errorf("shape %+v accepted", s)
			}
		})
	}
	if _, err := RandomLlama(1, SmolShape()); err != nil {
		t.Errorf("SmolShape rejected: %v", err)
	}
}

// RoPE must rotate by position so that a query-key product depends only on
// the distance between the two positions, and must keep lengths.
func TestRopeIsRelative(t *testing.T) {
	t.Parallel()
	const hd = 8
	q := []float64{0.3, -1, 2, 0.5, 1, 1, -0.2, 0.7}
	k := []float64{1, 0.1, -0.4, 2, 0.3, -1, 0.9, 0.2}
	at := func(v []float64, pos int) []float64 {
		out := slices.Clone(v)
		rope(out, hd, pos, 10000)
		return out
	}
	if d := math.Abs(dot(at(q, 7), at(k, 3)) - dot(at(q, 104), at(k, 100))); d > 1e-9 {
		t.Errorf("q.k at distance 4 differs by %g between offsets", d)
	}
	if d := math.Abs(dot(at(q, 5), at(q, 5)) - dot(q, q)); d > 1e-9 {
		t.Errorf("rotation changed the squared length by %g", d)
	}
	if got := at(q, 0); !slices.Equal(got, q) {
		t.Errorf("position 0 rotated: %v", got)
	}
	// The first pair turns by exactly pos radians (base^0 = 1).
	got := at([]float64{1, 0, 0, 0, 0, 0, 0, 0}, 1)
	if math.Abs(got[0]-math.Cos(1)) > 1e-15 || math.Abs(got[1]-math.Sin(1)) > 1e-15 {
		t.Errorf("pair (0,1) at position 1 = (%v, %v)", got[0], got[1])
	}
}

func TestWriteLlamaGGUF(t *testing.T) {
	t.Parallel()
	shape := Shape{Layers: 2, Embd: 32, Heads: 4, KVHeads: 2, FFN: 48, Vocab: 260, Context: 128}
	m, err := RandomLlama(6, shape)
	if err != nil {
		t.Fatal(err)
	}
	weights := map[string][]float32{}
	for _, ts := range m.layout(false).tensors {
		w := make([]float32, ts.elements())
		for r := range ts.rows() {
			ts.row(r, w[r*int(ts.shape[0]):])
		}
		weights[ts.name] = w
	}
	for _, tt := range []struct {
		name    string
		opts    []WriteOption
		matType ggml.TensorType
	}{
		{"f32", nil, ggml.TensorTypeF32},
		{"f16", []WriteOption{WithF16()}, ggml.TensorTypeF16},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "llama.gguf")
			if err := WriteLlamaGGUF(path, m, tt.opts...); err != nil {
				t.Fatal(err)
			}
			g, err := ReadGGUF(path)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][]uint64{
				"token_embd.weight":  {32, 260},
				"output.weight":      {32, 260},
				"output_norm.weight": {32},
			}
			for i := range 2 {
				for name, s := range map[string][]uint64{
					"attn_norm": {32}, "attn_q": {32, 32}, "attn_k": {32, 16}, "attn_v": {32, 16}, "attn_output": {32, 32},
					"ffn_norm": {32}, "ffn_gate": {32, 48}, "ffn_up": {32, 48}, "ffn_down": {48, 32},
				} {
					want[blockTensorName(i, name)] = s
				}
			}
			checkTensors(t, g, want, tt.matType, ggml.TensorTypeF32)
			// The weights are F16 values, so both files hold exactly the
			// numbers the Go forward pass uses.
			for name, w := range weights {
				got, err := g.Float32s(name)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, w) {
					t.Errorf("tensor %s differs from the model's weights", name)
				}
			}
			tokens := g.KV.Strings("tokenizer.ggml.tokens")
			if len(tokens) != 260 || tokens[257] != "<pad_257>" || tokens[259] != "<pad_259>" {
				t.Errorf("padding tokens: %d tokens, %q", len(tokens), tokens[256:])
			}
			if g.KV.Uint("attention.head_count_kv") != 2 || g.KV.Uint("rope.dimension_count") != 8 {
				t.Error("head metadata wrong")
			}
		})
	}
}

func TestWriteTiedLlamaHasNoOutputTensor(t *testing.T) {
	t.Parallel()
	s := DefaultShape()
	s.TiedOutput = true
	m, err := RandomLlama(1, s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tied.gguf")
	if err := WriteLlamaGGUF(path, m); err != nil {
		t.Fatal(err)
	}
	g, err := ReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Tensors["output.weight"]; ok {
		t.Error("tied model has output.weight")
	}
	if len(g.Tensors) != 2+9*s.Layers {
		t.Errorf("%d tensors", len(g.Tensors))
	}
}

// TestDimsReadBack: the shape a written GGUF gives runner.ReadShape is the
// one the model was made with, tied output or not, so the FLOP count of a
// benchmark model read from its file equals the one its Shape gives.
func TestDimsReadBack(t *testing.T) {
	t.Parallel()
	tied := DefaultShape()
	tied.TiedOutput = true
	for _, s := range []Shape{DefaultShape(), tied} {
		m, err := RandomLlama(1, s)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := WriteLlamaGGUF(path, m); err != nil {
			t.Fatal(err)
		}
		got, err := runner.ReadShape(path)
		if err != nil {
			t.Fatal(err)
		}
		want := runner.Shape{Layers: 2, Embd: 64, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: ByteVocab}
		if got != want || s.Dims() != want {
			t.Errorf("tied %v: ReadShape = %+v, Dims = %+v, want %+v", s.TiedOutput, got, s.Dims(), want)
		}
	}
}
