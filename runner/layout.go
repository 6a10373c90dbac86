package runner

import (
	"fmt"
	"os"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/udgamlabs/udgam-ci/ggufspec"
)

// ReadLayout reads the layout of the GGUF model at path.
func ReadLayout(path string) (ggufspec.Layout, error) {
	g, err := decodeSizes(path)
	if err != nil {
		return ggufspec.Layout{}, err
	}
	return ggufspec.LayoutFromKV(g.KV()), nil
}

// decodeSizes reads a GGUF's metadata and tensor list, skipping arrays
// longer than per-layer ones (the vocabulary): enough for its sizes.
func decodeSizes(path string) (g *ggml.GGML, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	defer f.Close()
	// The decoder trusts sizes read from the file.
	defer func() {
		if r := recover(); r != nil {
			g, err = nil, fmt.Errorf("model %s: malformed GGUF: %v", path, r)
		}
	}()
	if g, err = ggml.Decode(f, 4096); err != nil {
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	return g, nil
}
