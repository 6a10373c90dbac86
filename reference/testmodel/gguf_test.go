package testmodel

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/udgamlabs/udgam-ci/runner"
)

func TestWriteBigramGGUFHeader(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bigram.gguf")
	b := RandomBigram(5)
	if err := WriteBigramGGUF(path, b, WithName("test-bigram")); err != nil {
		t.Fatal(err)
	}
	g, err := ReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}

	uints := map[string]uint32{
		"context_length":              bigramContext,
		"embedding_length":            264,
		"block_count":                 1,
		"feed_forward_length":         64,
		"attention.head_count":        4,
		"attention.head_count_kv":     4,
		"rope.dimension_count":        66,
		"vocab_size":                  ByteVocab,
		"tokenizer.ggml.bos_token_id": uint32(BOS),
		"tokenizer.ggml.eos_token_id": uint32(BOS),
		"general.file_type":           0,
	}
	for k, want := range uints {
		if got, ok := g.KV.Value(prefixed(k)).(uint32); !ok || got != want {
			t.Errorf("%s = %v, want %d", k, g.KV.Value(prefixed(k)), want)
		}
	}
	strs := map[string]string{
		"general.architecture": "llama",
		"general.name":         "test-bigram",
		"tokenizer.ggml.model": "gpt2",
		"tokenizer.ggml.pre":   "smollm",
	}
	for k, want := range strs {
		if got := g.KV.String(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if eps := g.KV.Float("attention.layer_norm_rms_epsilon"); eps != 1e-5 {
		t.Errorf("rms epsilon = %v", eps)
	}
	if !g.KV.Bool("tokenizer.ggml.add_bos_token") {
		t.Error("add_bos_token is not true")
	}
	if _, ok := g.KV["tokenizer.ggml.merges"]; !ok || len(g.KV.Strings("tokenizer.ggml.merges")) != 0 {
		t.Error("merges must be present and empty")
	}

	tokens := g.KV.Strings("tokenizer.ggml.tokens")
	types := g.KV.Ints("tokenizer.ggml.token_type")
	if len(tokens) != ByteVocab || len(types) != ByteVocab {
		t.Fatalf("%d tokens, %d types", len(tokens), len(types))
	}
	// GPT-2's byte alphabet: printable bytes stand for themselves.
	for id, want := range map[int]string{'a': "a", '!': "!", ' ': "Ġ", '\n': "Ċ", 0: "Ā", 0xFF: "ÿ", 0xAD: "Ń", 256: "<|endoftext|>"} {
		if tokens[id] != want {
			t.Errorf("token %d = %q, want %q", id, tokens[id], want)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(tokens)))) != ByteVocab {
		t.Error("tokens are not unique")
	}
	if types['a'] != tokenNormal || types[BOS] != tokenControl {
		t.Errorf("token types: byte %d, BOS %d", types['a'], types[BOS])
	}

	wantShapes := map[string][]uint64{
		"token_embd.weight":        {264, ByteVocab},
		"output.weight":            {264, ByteVocab},
		"output_norm.weight":       {264},
		"blk.0.attn_norm.weight":   {264},
		"blk.0.attn_q.weight":      {264, 264},
		"blk.0.attn_k.weight":      {264, 264},
		"blk.0.attn_v.weight":      {264, 264},
		"blk.0.attn_output.weight": {264, 264},
		"blk.0.ffn_norm.weight":    {264},
		"blk.0.ffn_gate.weight":    {264, 64},
		"blk.0.ffn_up.weight":      {264, 64},
		"blk.0.ffn_down.weight":    {64, 264},
	}
	checkTensors(t, g, wantShapes, ggml.TensorTypeF32, ggml.TensorTypeF32)
	for _, name := range []string{"blk.0.attn_output.weight", "blk.0.ffn_down.weight"} {
		vals, err := g.Float32s(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if v != 0 {
				t.Fatalf("%s[%d] = %v, want 0: the block must add nothing", name, i, v)
			}
		}
	}
}

func prefixed(k string) string {
	if strings.HasPrefix(k, "general.") || strings.HasPrefix(k, "tokenizer.") {
		return k
	}
	return "llama." + k
}

// checkTensors checks names, shapes and types: matrices are matType, vectors
// vecType.
func checkTensors(t *testing.T, g *GGUF, want map[string][]uint64, matType, vecType ggml.TensorType) {
	t.Helper()
	if len(g.Tensors) != len(want) {
		t.Errorf("%d tensors, want %d", len(g.Tensors), len(want))
	}
	for name, shape := range want {
		tt, ok := g.Tensors[name]
		if !ok {
			t.Errorf("tensor %s missing", name)
			continue
		}
		if !slices.Equal(tt.Shape, shape) {
			t.Errorf("%s shape %v, want %v", name, tt.Shape, shape)
		}
		wantType := vecType
		if len(shape) > 1 {
			wantType = matType
		}
		if ggml.TensorType(tt.Kind) != wantType {
			t.Errorf("%s type %v, want %v", name, ggml.TensorType(tt.Kind), wantType)
		}
	}
}

// TestBigramGGUFLogitsAreTheTable recomputes, from the file's numbers, what
// llama.cpp computes for the bigram file (the block adds zero, so the last
// hidden state is the embedding) and compares with the model's arithmetic.
func TestBigramGGUFLogitsAreTheTable(t *testing.T) {
	t.Parallel()
	b, err := FitBigram([]byte(strings.Repeat("to be or not to be, that is the question. ", 20)), 0.01)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bigram.gguf")
	if err := WriteBigramGGUF(path, b); err != nil {
		t.Fatal(err)
	}
	g, err := ReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	n := int(g.KV.Uint("embedding_length"))
	eps := float64(g.KV.Float("attention.layer_norm_rms_epsilon"))
	vals := map[string][]float32{}
	for _, name := range []string{"token_embd.weight", "output_norm.weight", "output.weight"} {
		if vals[name], err = g.Float32s(name); err != nil {
			t.Fatal(err)
		}
	}
	embd, norm, out := vals["token_embd.weight"], vals["output_norm.weight"], vals["output.weight"]

	h := make([]float64, n)
	x := make([]float64, n)
	logits := make([]float64, ByteVocab)
	var worst float64
	for prev := range ByteVocab {
		for i := range x {
			x[i] = float64(embd[prev*n+i])
		}
		rmsNorm(h, x, norm, eps)
		matVec(logits, out, h)
		lse := LogSumExp(logits)
		for next := range ByteVocab {
			worst = max(worst, math.Abs(logits[next]-lse-b.LogProb(int32(prev), int32(next))))
		}
	}
	if worst > 1e-5 {
		t.Errorf("file's log-probabilities differ from the model's by up to %g nats", worst)
	}
}

// The in-memory models describe themselves as the engine's ReadInfo
// describes their files, so a run header is the same for both.
func TestInfoMatchesReadInfo(t *testing.T) {
	t.Parallel()
	llama, err := RandomLlama(1, Shape{Layers: 1, Embd: 32, Heads: 2, KVHeads: 1, FFN: 48, Vocab: 300, Context: 64})
	if err != nil {
		t.Fatal(err)
	}
	bigram := RandomBigram(2)
	tests := []struct {
		name  string
		write func(path string) error
		info  runner.Info
	}{
		{"bigram", func(p string) error { return WriteBigramGGUF(p, bigram) }, bigram.Info()},
		{"llama", func(p string) error { return WriteLlamaGGUF(p, llama) }, llama.Info()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.name+".gguf")
			if err := tt.write(path); err != nil {
				t.Fatal(err)
			}
			got, err := runner.ReadInfo(path)
			if err != nil {
				t.Fatal(err)
			}
			// the file's own identity, which a model in memory has none of
			got.Path, got.SHA256, got.Fingerprint = "", "", ""
			if !reflect.DeepEqual(got, tt.info) {
				t.Errorf("ReadInfo:\n%+v\nmodel's Info:\n%+v", got, tt.info)
			}
		})
	}
}

func TestWriteErrorsLeaveNoFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "bigram.gguf")
	if err := WriteBigramGGUF(path, RandomBigram(1), WithF16()); err == nil {
		t.Error("F16 bigram accepted")
	}
	missing := filepath.Join(dir, "no-such-dir", "m.gguf")
	if err := WriteBigramGGUF(missing, RandomBigram(1)); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("got %v, want an error naming %s", err, missing)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("failed writes left %v", entries)
	}
}
