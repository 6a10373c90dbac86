package runner

import (
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
)

func TestCheckLoadable(t *testing.T) {
	t.Parallel()
	gemma := func(layers, window uint32) ggml.KV {
		return ggml.KV{"general.architecture": "gemma3", "gemma3.block_count": layers, "gemma3.attention.sliding_window": window}
	}
	lfm2 := func(lCache uint32, heads any) ggml.KV {
		return ggml.KV{"general.architecture": "lfm2", "lfm2.block_count": uint32(3), "lfm2.shortconv.l_cache": lCache, "lfm2.attention.head_count_kv": heads}
	}
	tests := []struct {
		name string
		kv   ggml.KV
		want string // "" for loadable
	}{
		{"gemma3 with a global layer", gemma(6, 512), ""},
		{"gemma3 without a window", gemma(2, 0), ""},
		{"gemma3 without a global layer", gemma(5, 512), "without a global-attention layer"},
		{"lfm2 hybrid", lfm2(3, []uint32{0, 4, 0}), ""},
		{"lfm2 all attention", lfm2(3, []uint32{4, 4, 4}), "all attention"},
		{"lfm2 all convolution", lfm2(3, []uint32{0, 0, 0}), "all shortconv"},
		{"lfm2 kernel of one", lfm2(1, []uint32{0, 4, 0}), "shortconv.l_cache = 1"},
		{"gemma2 of one layer", ggml.KV{"general.architecture": "gemma2", "gemma2.block_count": uint32(1), "gemma2.attention.sliding_window": uint32(64)}, "without a global-attention layer"},
		{"falcon-h1", ggml.KV{"general.architecture": "falcon-h1", "falcon-h1.block_count": uint32(2), "falcon-h1.ssm.conv_kernel": uint32(4),
			"falcon-h1.ssm.time_step_rank": uint32(8), "falcon-h1.ssm.group_count": uint32(1)}, ""},
		{"jamba without attention", ggml.KV{"general.architecture": "jamba", "jamba.block_count": uint32(2), "jamba.attention.head_count_kv": []uint32{0, 0}}, "without attention layers"},
		{"llama", ggml.KV{"general.architecture": "llama", "llama.block_count": uint32(2)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkLoadable(tt.kv)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

func TestCheckSSM(t *testing.T) {
	t.Parallel()
	tests := []struct {
		arch string
		kv   map[string]any
		want string // "" for loadable
	}{
		{"mamba2", map[string]any{"embedding_length": uint32(64), "ssm.inner_size": uint32(128), "ssm.conv_kernel": uint32(4), "ssm.time_step_rank": uint32(8), "ssm.group_count": uint32(2)}, ""},
		{"mamba2", map[string]any{"embedding_length": uint32(64), "ssm.inner_size": uint32(192), "ssm.conv_kernel": uint32(4), "ssm.time_step_rank": uint32(8), "ssm.group_count": uint32(1)}, "twice the embedding length"},
		{"falcon-h1", map[string]any{"embedding_length": uint32(64), "ssm.inner_size": uint32(96), "ssm.conv_kernel": uint32(4), "ssm.time_step_rank": uint32(8), "ssm.group_count": uint32(3)}, "groups to divide the heads"},
		{"falcon-h1", map[string]any{"embedding_length": uint32(64), "ssm.inner_size": uint32(96), "ssm.conv_kernel": uint32(1), "ssm.time_step_rank": uint32(8), "ssm.group_count": uint32(1)}, "kernel of at least 2"},
		{"mamba", map[string]any{"embedding_length": uint32(32), "ssm.inner_size": uint32(64), "ssm.conv_kernel": uint32(4)}, ""},
	}
	for _, tt := range tests {
		kv := ggml.KV{"general.architecture": tt.arch}
		for k, v := range tt.kv {
			kv[tt.arch+"."+k] = v
		}
		err := checkLoadable(kv)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s %v: error %v, want %q", tt.arch, tt.kv, err, tt.want)
		}
	}
}
