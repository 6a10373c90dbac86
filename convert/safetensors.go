package convert

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"

	"github.com/x448/float16"
)

// header is one entry of a safetensors JSON header.
type header struct {
	Dtype   string   `json:"dtype"`
	Shape   []uint64 `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// dtypeSize is the bytes per value of each source dtype the converter
// reads. Other dtypes (integer buffers, float64) fail when read, so a
// checkpoint holding one converts as long as no architecture needs it.
var dtypeSize = map[string]int64{"F32": 4, "F16": 2, "BF16": 2}

// readSafetensorsFile adds the tensors of one safetensors file to w.
func readSafetensorsFile(fsys fs.FS, path string, w *weightSet) error {
	hdrs, dataStart, size, err := readHeader(fsys, path)
	if err != nil {
		return err
	}
	w.files = append(w.files, path)
	for name, h := range hdrs {
		n := int64(1)
		for _, d := range h.Shape {
			n *= int64(d)
		}
		elem, known := dtypeSize[h.Dtype]
		if known && (h.Offsets[1]-h.Offsets[0] != n*elem || h.Offsets[0] < 0 || dataStart+h.Offsets[1] > size) {
			return fmt.Errorf("%s: tensor %s: offsets %v do not hold %d %s values", path, name, h.Offsets, n, h.Dtype)
		}
		if known && len(h.Shape) == 0 {
			return fmt.Errorf("%s: tensor %s has no shape", path, name)
		}
		offset, dtype := dataStart+h.Offsets[0], h.Dtype
		t := &sourceTensor{file: path, dtype: dtype, shape: h.Shape}
		t.read = func() ([]float32, error) {
			if !known {
				return nil, fmt.Errorf("dtype %s; the converter reads F32, F16 and BF16", dtype)
			}
			raw, err := readAt(fsys, path, offset, n*elem)
			if err != nil {
				return nil, err
			}
			return decode(dtype, raw), nil
		}
		if err := w.add(name, t); err != nil {
			return err
		}
	}
	return nil
}

// readHeader returns a file's tensor headers, where its data starts, and its size.
func readHeader(fsys fs.FS, path string) (map[string]header, int64, int64, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, 0, err
	}
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: header length: %w", path, err)
	}
	if n == 0 || int64(n) > st.Size()-8 || n > 100<<20 {
		return nil, 0, 0, fmt.Errorf("%s: header length %d does not fit a file of %d bytes", path, n, st.Size())
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: header: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: header: %w", path, err)
	}
	hdrs := make(map[string]header, len(raw))
	for k, v := range raw {
		if k == "__metadata__" {
			continue
		}
		var h header
		if err := json.Unmarshal(v, &h); err != nil {
			return nil, 0, 0, fmt.Errorf("%s: header of tensor %s: %w", path, k, err)
		}
		hdrs[k] = h
	}
	return hdrs, 8 + int64(n), st.Size(), nil
}

// readAt reads n bytes of a file at offset.
func readAt(fsys fs.FS, path string, offset, n int64) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw := make([]byte, n)
	if ra, ok := f.(io.ReaderAt); ok {
		_, err = ra.ReadAt(raw, offset)
	} else if _, err = io.CopyN(io.Discard, f, offset); err == nil {
		_, err = io.ReadFull(f, raw)
	}
	if err != nil {
		return nil, fmt.Errorf("read %d bytes at %d: %w", n, offset, err)
	}
	return raw, nil
}

// decode widens little-endian F32, F16 or BF16 values to float32, exactly.
func decode(dtype string, raw []byte) []float32 {
	vals := make([]float32, int64(len(raw))/dtypeSize[dtype])
	switch dtype {
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
	return vals
}
