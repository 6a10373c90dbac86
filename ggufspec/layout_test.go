package ggufspec

import (
	"testing"

	"github.com/ollama/ollama/fs/ggml"
)

func TestLayoutFromKV(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		kv     ggml.KV
		family string
		want   string
	}{
		{"llama", ggml.KV{"general.architecture": "llama", "llama.block_count": uint32(30)}, "transformer", "30 x attention"},
		{"gemma3 sliding", ggml.KV{"general.architecture": "gemma3", "gemma3.block_count": uint32(8), "gemma3.attention.sliding_window": uint32(512)},
			"transformer", "5 x sliding window 512, attention, 2 x sliding window 512"},
		{"gemma3 without window", ggml.KV{"general.architecture": "gemma3", "gemma3.block_count": uint32(3)}, "transformer", "3 x attention"},
		{"mamba2", ggml.KV{"general.architecture": "mamba2", "mamba2.block_count": uint32(4)}, "recurrent", "4 x ssm"},
		{"falcon-h1", ggml.KV{"general.architecture": "falcon-h1", "falcon-h1.block_count": uint32(2)}, "hybrid", "2 x attention+ssm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := LayoutFromKV(tt.kv)
			if l.Family != tt.family || l.String() != tt.want {
				t.Errorf("got %s: %s; want %s: %s", l.Family, l, tt.family, tt.want)
			}
		})
	}
}
