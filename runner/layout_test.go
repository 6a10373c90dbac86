package runner

import (
	"os"
	"slices"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
)

// LFM2 lists one KV head count per layer; 0 marks a short-convolution
// layer. The array is read as a GGUF file holds it.
func TestLayoutPerLayerHeads(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/lfm2.gguf"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	kv := ggml.KV{"general.architecture": "lfm2", "lfm2.block_count": uint32(4), "lfm2.attention.head_count_kv": []uint32{0, 0, 2, 0}}
	if err := ggml.WriteGGUF(f, kv, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	l, err := ReadLayout(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"shortconv", "shortconv", "attention", "shortconv"}; l.Family != "hybrid" || !slices.Equal(l.Layers, want) {
		t.Errorf("layout %+v, want hybrid %v", l, want)
	}
}
