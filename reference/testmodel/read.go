package testmodel

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/x448/float16"
)

// GGUF is a GGUF file read back with ollama's decoder (an implementation
// independent of our writers), for tests to check what was written.
type GGUF struct {
	KV      ggml.KV
	Tensors map[string]*ggml.Tensor // by name

	path  string
	data  []byte // the whole file
	start uint64 // offset of the tensor data
}

// ReadGGUF reads and decodes the GGUF file at path.
func ReadGGUF(path string) (*GGUF, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	g, err := ggml.Decode(bytes.NewReader(data), -1)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	ts := g.Tensors()
	out := &GGUF{KV: g.KV(), Tensors: map[string]*ggml.Tensor{}, path: path, data: data, start: ts.Offset}
	for _, t := range ts.Items() {
		out.Tensors[t.Name] = t
	}
	return out, nil
}

// Raw returns a tensor's stored bytes.
func (g *GGUF) Raw(name string) ([]byte, error) {
	t, ok := g.Tensors[name]
	if !ok {
		return nil, fmt.Errorf("%s: no tensor %s", g.path, name)
	}
	lo, hi := g.start+t.Offset, g.start+t.Offset+t.Size()
	if hi > uint64(len(g.data)) {
		return nil, fmt.Errorf("%s: tensor %s ends at byte %d of %d", g.path, name, hi, len(g.data))
	}
	return g.data[lo:hi], nil
}

// Float32s returns a tensor's elements as float32: exact for F32, F16 and
// BF16, dequantized for Q8_0.
func (g *GGUF) Float32s(name string) ([]float32, error) {
	raw, err := g.Raw(name)
	if err != nil {
		return nil, err
	}
	t := g.Tensors[name]
	n := int(t.Elements())
	out := make([]float32, 0, n)
	switch ggml.TensorType(t.Kind) {
	case ggml.TensorTypeF32:
		for i := range n {
			out = append(out, math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		}
	case ggml.TensorTypeF16:
		for i := range n {
			out = append(out, float16.Frombits(binary.LittleEndian.Uint16(raw[2*i:])).Float32())
		}
	case ggml.TensorTypeBF16:
		for i := range n {
			out = append(out, math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:]))<<16))
		}
	case ggml.TensorTypeQ8_0:
		// Blocks of 32: an F16 scale, then 32 int8 steps of it.
		for b := range n / 32 {
			blk := raw[b*34:]
			d := float16.Frombits(binary.LittleEndian.Uint16(blk)).Float32()
			for j := range 32 {
				out = append(out, d*float32(int8(blk[2+j])))
			}
		}
	default:
		return nil, fmt.Errorf("%s: tensor %s has type %v, not F32, F16, BF16 or Q8_0", g.path, name, ggml.TensorType(t.Kind))
	}
	return out, nil
}
