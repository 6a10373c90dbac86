package testmodel

import (
	"bytes"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/ollama/ollama/fs/ggml"
)

// Rewrite writes a copy of g to path with its metadata changed by edit
// (which may be nil) and without the tensors named in drop: GGUF files a
// converter would never write, for tests of what the loader refuses.
func (g *GGUF) Rewrite(path string, edit func(ggml.KV), drop ...string) error {
	kv := ggml.KV{}
	for k, v := range g.KV {
		kv[k] = v
	}
	if edit != nil {
		edit(kv)
	}
	var ts []*ggml.Tensor
	for _, name := range slices.Sorted(maps.Keys(g.Tensors)) {
		if slices.Contains(drop, name) {
			continue
		}
		raw, err := g.Raw(name)
		if err != nil {
			return err
		}
		t := g.Tensors[name]
		ts = append(ts, &ggml.Tensor{Name: name, Kind: t.Kind, Shape: slices.Clone(t.Shape), WriterTo: rawWriter(raw)})
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := ggml.WriteGGUF(f, kv, ts); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type rawWriter []byte

func (r rawWriter) WriteTo(w io.Writer) (int64, error) { return bytes.NewReader(r).WriteTo(w) }
