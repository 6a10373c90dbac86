package convert

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"strings"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// A pytorch_model.bin is what torch.save writes: a zip holding data.pkl (a
// pickle of the state dict) and one entry per storage under data/. The
// pickle is read by gopickle, which never runs code: it only builds values,
// and the globals a pickle may name are the few torch.save uses for a state
// dict (torchGlobal); any other global is refused.

// torchStorageTypes maps torch's storage classes to the dtype names used
// for safetensors, with their sizes. Only F32, F16 and BF16 can be read.
var torchStorageTypes = map[string]struct {
	dtype string
	size  int64
}{
	"FloatStorage": {"F32", 4}, "HalfStorage": {"F16", 2}, "BFloat16Storage": {"BF16", 2},
	"DoubleStorage": {"F64", 8}, "LongStorage": {"I64", 8}, "IntStorage": {"I32", 4},
	"ShortStorage": {"I16", 2}, "CharStorage": {"I8", 1}, "ByteStorage": {"U8", 1}, "BoolStorage": {"BOOL", 1},
}

type torchStorageClass struct{ dtype string }

type torchStorage struct {
	dtype string
	key   string
	numel int64
}

type torchTensor struct {
	storage *torchStorage
	offset  int64
	shape   []uint64
}

type callFunc func(args ...any) (any, error)

func (f callFunc) Call(args ...any) (any, error) { return f(args...) }

// torchGlobal resolves the globals of a state-dict pickle.
func torchGlobal(module, name string) (any, error) {
	switch module + "." + name {
	case "torch._utils._rebuild_tensor_v2":
		return callFunc(rebuildTensor), nil
	case "torch._utils._rebuild_parameter":
		// (tensor, requires_grad, backward_hooks): the tensor itself.
		return callFunc(func(args ...any) (any, error) {
			if len(args) < 1 {
				return nil, fmt.Errorf("_rebuild_parameter with %d arguments", len(args))
			}
			if t, ok := args[0].(*torchTensor); ok {
				return t, nil
			}
			return nil, fmt.Errorf("_rebuild_parameter of %T", args[0])
		}), nil
	}
	if module == "torch" {
		if st, ok := torchStorageTypes[name]; ok {
			return &torchStorageClass{dtype: st.dtype}, nil
		}
	}
	return nil, fmt.Errorf("the pickle names %s.%s, which a state dict does not hold; the converter loads only tensors and never runs code from a checkpoint", module, name)
}

// rebuildTensor is torch._utils._rebuild_tensor_v2(storage, storage_offset,
// size, stride, requires_grad, backward_hooks[, metadata]).
func rebuildTensor(args ...any) (any, error) {
	if len(args) < 4 {
		return nil, fmt.Errorf("_rebuild_tensor_v2 with %d arguments", len(args))
	}
	st, ok := args[0].(*torchStorage)
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2 of %T, not a storage", args[0])
	}
	offset, err := pickleInt(args[1])
	if err != nil {
		return nil, fmt.Errorf("storage offset: %w", err)
	}
	size, err := pickleInts(args[2])
	if err != nil {
		return nil, fmt.Errorf("size: %w", err)
	}
	stride, err := pickleInts(args[3])
	if err != nil {
		return nil, fmt.Errorf("stride: %w", err)
	}
	if len(size) != len(stride) {
		return nil, fmt.Errorf("size %v and stride %v differ in length", size, stride)
	}
	// Only row-major contiguous tensors: a view would need strided reads.
	want := int64(1)
	for i := len(size) - 1; i >= 0; i-- {
		if size[i] != 1 && stride[i] != want {
			return nil, fmt.Errorf("tensor of size %v has strides %v; only contiguous tensors are read", size, stride)
		}
		want *= size[i]
	}
	shape := make([]uint64, len(size))
	for i, d := range size {
		if d < 0 {
			return nil, fmt.Errorf("size %v", size)
		}
		shape[i] = uint64(d)
	}
	if offset < 0 || offset+want > st.numel {
		return nil, fmt.Errorf("tensor of %d values at offset %d in a storage of %d", want, offset, st.numel)
	}
	return &torchTensor{storage: st, offset: offset, shape: shape}, nil
}

func pickleInt(v any) (int64, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case *big.Int:
		if x.IsInt64() {
			return x.Int64(), nil
		}
	}
	return 0, fmt.Errorf("%v (%T) is not an integer", v, v)
}

func pickleInts(v any) ([]int64, error) {
	t, ok := v.(*types.Tuple)
	if !ok {
		return nil, fmt.Errorf("%T is not a tuple", v)
	}
	out := make([]int64, t.Len())
	for i := range out {
		n, err := pickleInt(t.Get(i))
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// torchPersistent resolves a persistent id ('storage', storage_type, key,
// location, numel) to a storage.
func torchPersistent(pid any) (any, error) {
	t, ok := pid.(*types.Tuple)
	if !ok || t.Len() < 5 {
		return nil, fmt.Errorf("persistent id %v is not a storage", pid)
	}
	if kind, _ := t.Get(0).(string); kind != "storage" {
		return nil, fmt.Errorf("persistent id of kind %v; want storage", t.Get(0))
	}
	class, ok := t.Get(1).(*torchStorageClass)
	if !ok {
		return nil, fmt.Errorf("persistent id with storage type %v", t.Get(1))
	}
	key, ok := t.Get(2).(string)
	if !ok {
		return nil, fmt.Errorf("persistent id with key %v", t.Get(2))
	}
	n, err := pickleInt(t.Get(4))
	if err != nil {
		return nil, fmt.Errorf("storage %s size: %w", key, err)
	}
	return &torchStorage{dtype: class.dtype, key: key, numel: n}, nil
}

// readTorchFile adds the tensors of one torch.save zip to w.
func readTorchFile(fsys fs.FS, path string, w *weightSet) error {
	f, err := fsys.Open(path)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		ra = bytes.NewReader(b)
	} else {
		w.closers = append(w.closers, f.Close)
	}
	zr, err := zip.NewReader(ra, st.Size())
	if err != nil {
		return fmt.Errorf("%s: not a zip archive as torch.save writes since PyTorch 1.6 (older formats are not read): %w", path, err)
	}
	entries := map[string]*zip.File{}
	var pkl []string
	for _, zf := range zr.File {
		entries[zf.Name] = zf
		if strings.HasSuffix(zf.Name, "/data.pkl") && strings.Count(zf.Name, "/") == 1 {
			pkl = append(pkl, zf.Name)
		}
	}
	if len(pkl) != 1 {
		return fmt.Errorf("%s: %d data.pkl entries; want one", path, len(pkl))
	}
	prefix := strings.TrimSuffix(pkl[0], "data.pkl")
	if bo, ok := entries[prefix+"byteorder"]; ok {
		b, err := readZipEntry(bo)
		if err != nil {
			return fmt.Errorf("%s: byteorder: %w", path, err)
		}
		if s := strings.TrimSpace(string(b)); s != "little" {
			return fmt.Errorf("%s: byte order %q; only little-endian checkpoints are read", path, s)
		}
	}
	b, err := readZipEntry(entries[pkl[0]])
	if err != nil {
		return fmt.Errorf("%s: %s: %w", path, pkl[0], err)
	}
	u := pickle.NewUnpickler(bytes.NewReader(b))
	u.FindClass = torchGlobal
	u.PersistentLoad = torchPersistent
	top, err := u.Load()
	if err != nil {
		return fmt.Errorf("%s: %s: %w", path, pkl[0], err)
	}
	items, err := stateDictItems(top)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	w.files = append(w.files, path)
	for _, it := range items {
		t := it.t
		entry := entries[prefix+"data/"+t.storage.key]
		if entry == nil {
			return fmt.Errorf("%s: tensor %s: storage %s is missing", path, it.name, t.storage.key)
		}
		n := int64(1)
		for _, d := range t.shape {
			n *= int64(d)
		}
		dtype := t.storage.dtype
		elem, known := dtypeSize[dtype]
		if known && int64(entry.UncompressedSize64) < t.storage.numel*elem {
			return fmt.Errorf("%s: tensor %s: storage %s has %d bytes, not the %d of %d %s values", path, it.name, t.storage.key, entry.UncompressedSize64, t.storage.numel*elem, t.storage.numel, dtype)
		}
		src := &sourceTensor{file: path, dtype: dtype, shape: t.shape}
		src.read = func() ([]float32, error) {
			if !known {
				return nil, fmt.Errorf("dtype %s; the converter reads F32, F16 and BF16", dtype)
			}
			raw, err := readZipRange(ra, entry, t.offset*elem, n*elem)
			if err != nil {
				return nil, fmt.Errorf("storage %s: %w", t.storage.key, err)
			}
			return decode(dtype, raw), nil
		}
		if err := w.add(it.name, src); err != nil {
			return err
		}
	}
	return nil
}

type namedTorchTensor struct {
	name string
	t    *torchTensor
}

// stateDictItems lists a state dict's tensors: a dict of names to tensors.
func stateDictItems(top any) ([]namedTorchTensor, error) {
	var out []namedTorchTensor
	add := func(k, v any) error {
		name, ok := k.(string)
		if !ok {
			return fmt.Errorf("state dict key %v is not a string", k)
		}
		t, ok := v.(*torchTensor)
		if !ok {
			return fmt.Errorf("state dict entry %s is a %T, not a tensor", name, v)
		}
		out = append(out, namedTorchTensor{name, t})
		return nil
	}
	switch d := top.(type) {
	case *types.OrderedDict:
		for e := d.List.Front(); e != nil; e = e.Next() {
			ent := e.Value.(*types.OrderedDictEntry)
			if err := add(ent.Key, ent.Value); err != nil {
				return nil, err
			}
		}
	case *types.Dict:
		for _, k := range d.Keys() {
			if err := add(k, d.MustGet(k)); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("the pickle holds a %T, not a state dict", top)
	}
	return out, nil
}

func readZipEntry(zf *zip.File) ([]byte, error) {
	r, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// readZipRange reads n bytes at off of an entry's content: directly from
// the archive for stored entries (torch.save stores without compression),
// else by decompressing up to them.
func readZipRange(ra io.ReaderAt, zf *zip.File, off, n int64) ([]byte, error) {
	if off+n > int64(zf.UncompressedSize64) {
		return nil, fmt.Errorf("bytes %d..%d of an entry of %d", off, off+n, zf.UncompressedSize64)
	}
	buf := make([]byte, n)
	if zf.Method == zip.Store {
		start, err := zf.DataOffset()
		if err != nil {
			return nil, err
		}
		if _, err := ra.ReadAt(buf, start+off); err != nil {
			return nil, err
		}
		return buf, nil
	}
	r, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if _, err := io.CopyN(io.Discard, r, off); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
