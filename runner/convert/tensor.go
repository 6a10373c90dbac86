package convert

import (
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"

	"github.com/ollama/ollama/convert"
	"github.com/ollama/ollama/fs/ggml"
	"github.com/x448/float16"
)

// tensor is one safetensors tensor that writes itself as kind. It
// implements ollama's convert.Tensor, so ollama's converters can rename it,
// attach a repacker (the llama q/k permutation) and hand it to the GGUF
// writer.
type tensor struct {
	fsys   fs.FS
	path   string
	dtype  string // F32, F16 or BF16
	offset int64  // of the first byte in the file
	count  int64  // values
	name   string
	shape  []uint64
	kind   ggml.TensorType
	repack convert.Repacker
}

func (t *tensor) Name() string                    { return t.name }
func (t *tensor) Shape() []uint64                 { return t.shape }
func (t *tensor) Kind() uint32                    { return uint32(t.kind) }
func (t *tensor) SetRepacker(fn convert.Repacker) { t.repack = fn }
func (t *tensor) Clone() convert.Tensor           { c := *t; c.shape = slices.Clone(t.shape); return &c }

// WriteTo widens the source values to float32 (exactly: every f16 and bf16
// value is a float32), applies the repacker, and encodes them as kind.
func (t *tensor) WriteTo(w io.Writer) (int64, error) {
	vals, err := t.read()
	if err != nil {
		return 0, fmt.Errorf("%s: tensor %s: %w", t.path, t.name, err)
	}
	if t.repack != nil {
		if vals, err = t.repack(t.name, vals, t.shape); err != nil {
			return 0, fmt.Errorf("repack %s: %w", t.name, err)
		}
	}
	var out []byte
	switch t.kind {
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
		return 0, fmt.Errorf("tensor %s: cannot write type %v", t.name, t.kind)
	}
	n, err := w.Write(out)
	return int64(n), err
}

func (t *tensor) read() ([]float32, error) {
	f, err := t.fsys.Open(t.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := sourceSize[t.dtype]
	raw := make([]byte, t.count*size)
	if ra, ok := f.(io.ReaderAt); ok {
		_, err = ra.ReadAt(raw, t.offset)
	} else if _, err = io.CopyN(io.Discard, f, t.offset); err == nil {
		_, err = io.ReadFull(f, raw)
	}
	if err != nil {
		return nil, fmt.Errorf("read %d bytes at %d: %w", len(raw), t.offset, err)
	}
	vals := make([]float32, t.count)
	switch t.dtype {
	case "F32":
		for i := range vals {
			vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case "F16":
		for i := range vals {
			vals[i] = float16.Frombits(binary.LittleEndian.Uint16(raw[2*i:])).Float32()
		}
	case "BF16":
		for i := range vals {
			vals[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		}
	}
	return vals, nil
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
