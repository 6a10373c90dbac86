package runner

import (
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
)

// TestFLOPs checks the count against sums done by hand on a tiny shape:
// q and o are 4x4, k and v 4x2, the feed-forward three 4x8 matrices, so a
// token costs 2*(16+8+8+16+96) = 288 FLOPs per layer, a key 4*4 = 16 per
// layer and a read 2*4*10 = 80.
func TestFLOPs(t *testing.T) {
	t.Parallel()
	one := Shape{Layers: 1, Embd: 4, Heads: 2, KVHeads: 1, HeadDim: 2, FFN: 8, Vocab: 10}
	two := one
	two.Layers = 2
	seq := Request{Branches: []Branch{{Tokens: []int32{1, 2, 3}, Positions: []int{1, 2}}}}
	shared := Request{Prefix: []int32{1, 2}, Branches: []Branch{
		{Tokens: []int32{3}, Positions: []int{2}},
		{Tokens: []int32{4, 5}, Positions: []int{2, 3}},
	}}
	tests := []struct {
		name  string
		shape Shape
		reqs  []Request
		want  float64
	}{
		{"nothing", one, nil, 0},
		// 3 tokens, 1+2+3 keys, 2 reads.
		{"one sequence", one, []Request{seq}, 3*288 + 6*16 + 2*80},
		// The head does not scale with layers.
		{"two layers", two, []Request{seq}, 3*576 + 6*32 + 2*80},
		// The prefix once (2 tokens, 1+2 keys), then each branch's tokens
		// with their keys past the prefix (3; 3+4) and reads.
		// The head once per output read: the prefix's last token (both
		// branches read it) and the second branch's first token.
		{"shared prefix", one, []Request{shared}, (2*288 + 3*16) + (288 + 3*16) + (2*288 + 7*16) + 2*80},
		{"requests add", one, []Request{seq, shared}, 1120 + 1808},
		// Two requests beginning alike: without ShareStarts each is fed.
		{"starts fed twice", one, []Request{shared, shared}, 2 * 1808},
	}
	lim := Limits{BatchTokens: 512, MaxSeqs: 8, Cells: 64}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FLOPs(tt.shape, tt.reqs, lim); got != tt.want {
				t.Errorf("FLOPs = %v, want %v", got, tt.want)
			}
		})
	}
	// With it, the second request adds nothing: every token and read is
	// the first's.
	lim.ShareStarts = true
	t.Run("starts shared", func(t *testing.T) {
		if got, want := FLOPs(one, []Request{shared, shared}, lim), 1808.0; got != want {
			t.Errorf("FLOPs = %v, want %v", got, want)
		}
	})
}

func TestKVBytes(t *testing.T) {
	t.Parallel()
	s := Shape{Layers: 30, Embd: 576, Heads: 9, KVHeads: 3, HeadDim: 64, FFN: 1536, Vocab: 49152}
	// SmolLM2-135M, 2,048 cells: 2048 x 30 layers x (k, v) x 192 x 4 bytes.
	if got, want := s.KVBytes(2048), int64(2048*30*2*192*4); got != want {
		t.Errorf("KVBytes(2048) = %d, want %d", got, want)
	}
}

func TestShapeFromGGUF(t *testing.T) {
	t.Parallel()
	llama := func(edit func(ggml.KV)) ggml.KV {
		kv := ggml.KV{
			"general.architecture":          "llama",
			"llama.block_count":             uint32(2),
			"llama.embedding_length":        uint32(64),
			"llama.feed_forward_length":     uint32(128),
			"llama.attention.head_count":    uint32(4),
			"llama.attention.head_count_kv": uint32(2),
		}
		if edit != nil {
			edit(kv)
		}
		return kv
	}
	embd := []*ggml.Tensor{{Name: "token_embd.weight", Shape: []uint64{64, 300}}}
	both := append([]*ggml.Tensor{{Name: "output.weight", Shape: []uint64{64, 280}}}, embd...)
	want := Shape{Layers: 2, Embd: 64, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 300}
	tests := []struct {
		name    string
		kv      ggml.KV
		tensors []*ggml.Tensor
		want    Shape
		err     string
	}{
		{"tied output", llama(nil), embd, want, ""},
		{"output head", llama(nil), both, func() Shape { s := want; s.Vocab = 280; return s }(), ""},
		{"no grouping", llama(func(kv ggml.KV) { delete(kv, "llama.attention.head_count_kv") }), embd,
			func() Shape { s := want; s.KVHeads = 4; return s }(), ""},
		{"key length", llama(func(kv ggml.KV) {
			kv["llama.attention.key_length"] = uint32(32)
			kv["llama.attention.value_length"] = uint32(32)
		}), embd, func() Shape { s := want; s.HeadDim = 32; return s }(), ""},
		{"other value length", llama(func(kv ggml.KV) { kv["llama.attention.value_length"] = uint32(8) }), embd, Shape{}, "value length 8"},
		{"other architecture", ggml.KV{"general.architecture": "gpt2"}, embd, Shape{}, `"gpt2"`},
		{"no output head", llama(nil), nil, Shape{}, "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ShapeFromGGUF(tt.kv, tt.tensors)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one naming %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ShapeFromGGUF = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
