package runner

import (
	"testing"

	"github.com/ollama/ollama/fs/ggml"
)

// dtype is the file type llama.cpp records, not the tensor type with the
// most elements: Gemma 3 270M's Q4_K_M keeps its embedding in Q8_0.
func TestFileType(t *testing.T) {
	t.Parallel()
	gemma := map[string]uint64{"Q8_0": 167772160, "Q5_0": 60000000, "Q4_K": 25000000, "Q6_K": 15000000, "F32": 100000}
	for _, tc := range []struct {
		name  string
		kv    ggml.KV
		elems map[string]uint64
		want  string
	}{
		{"Q4_K_M with a Q8_0 embedding", ggml.KV{"general.file_type": uint32(15)}, gemma, "Q4_K_M"},
		{"Q4_1", ggml.KV{"general.file_type": uint32(3)}, map[string]uint64{"Q4_1": 9, "Q8_0": 10}, "Q4_1"},
		{"F32 is file type 0", ggml.KV{"general.file_type": uint32(0)}, map[string]uint64{"F32": 5}, "F32"},
		{"guessed by llama.cpp", ggml.KV{"general.file_type": uint32(1024 + 7)}, map[string]uint64{"F32": 9, "Q8_0": 5}, "Q8_0"},
		{"no file type", ggml.KV{}, gemma, "Q8_0"},
		{"a type ollama does not name", ggml.KV{"general.file_type": uint32(999)}, gemma, "Q8_0"},
	} {
		if got := fileType(tc.kv, tc.elems); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestQuantized(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		types map[string]int
		want  bool
	}{
		{map[string]int{"F32": 3, "F16": 10}, false},
		{map[string]int{"F32": 3, "BF16": 10}, false},
		{map[string]int{"F32": 3, "Q4_K": 10, "Q6_K": 1}, true},
		{map[string]int{"F32": 3, "F16": 10, "Q8_0": 1}, true},
	} {
		if got := (Info{TensorTypes: tc.types}).Quantized(); got != tc.want {
			t.Errorf("%v: Quantized %v, want %v", tc.types, got, tc.want)
		}
	}
}
