package convert

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/x448/float16"
)

// tensorWriter writes one Tensor's values as kind when the GGUF writer
// asks for them.
type tensorWriter struct {
	t    Tensor
	kind ggml.TensorType
}

// WriteTo reads the values (source f16 and bf16 values are widened to
// float32 exactly), checks their count against the shape and encodes them.
func (tw *tensorWriter) WriteTo(w io.Writer) (int64, error) {
	vals, err := tw.t.Read()
	if err != nil {
		return 0, fmt.Errorf("tensor %s: %w", tw.t.Name, err)
	}
	n := uint64(1)
	for _, d := range tw.t.Shape {
		n *= d
	}
	if uint64(len(vals)) != n {
		return 0, fmt.Errorf("tensor %s: %d values for shape %v", tw.t.Name, len(vals), tw.t.Shape)
	}
	var out []byte
	switch tw.kind {
	case ggml.TensorTypeF32:
		out = make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
	case ggml.TensorTypeF16:
		out = make([]byte, 2*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint16(out[2*i:], float16.Fromfloat32(v).Bits())
		}
	case ggml.TensorTypeBF16:
		out = make([]byte, 2*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint16(out[2*i:], toBF16(v))
		}
	case ggml.TensorTypeQ8_0:
		out = quantizeQ8(vals)
	default:
		return 0, fmt.Errorf("tensor %s: cannot write type %v", tw.t.Name, tw.kind)
	}
	m, err := w.Write(out)
	return int64(m), err
}

// toBF16 rounds to nearest even, as PyTorch and ggml do; NaN stays NaN.
func toBF16(v float32) uint16 {
	b := math.Float32bits(v)
	if v != v {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

const q8Block = 32

// quantizeQ8 encodes rows of whole 32-value blocks as ggml's Q8_0: per
// block a float16 scale d = max|x|/127 and 32 int8 values round(x/d).
func quantizeQ8(vals []float32) []byte {
	out := make([]byte, 0, len(vals)/q8Block*(2+q8Block))
	for b := 0; b+q8Block <= len(vals); b += q8Block {
		block := vals[b : b+q8Block]
		var amax float32
		for _, v := range block {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		out = binary.LittleEndian.AppendUint16(out, float16.Fromfloat32(d).Bits())
		for _, v := range block {
			out = append(out, byte(int8(math.Round(float64(v*id)))))
		}
	}
	return out
}
