package converttest

import (
	"archive/zip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/x448/float16"
)

// Format is a weight file layout the converter reads.
type Format string

const (
	Safetensors        Format = "safetensors"         // model.safetensors
	ShardedSafetensors Format = "sharded-safetensors" // model.safetensors.index.json and 2 shards
	Torch              Format = "pytorch"             // pytorch_model.bin
	ShardedTorch       Format = "sharded-pytorch"     // pytorch_model.bin.index.json and 2 shards
)

// Formats is every Format.
var Formats = []Format{Safetensors, ShardedSafetensors, Torch, ShardedTorch}

// Checkpoint is a Hugging Face checkpoint of any architecture: config.json,
// the test tokenizer (tokenizer.json, tokenizer_config.json) and weights.
type Checkpoint struct {
	Config  map[string]any
	Tensors map[string]Tensor
	Dtype   string // F32, F16 or BF16
	// Tokenizer, when set, is a directory whose tokenizer files
	// (TokenizerFiles) are copied in place of the tiny test tokenizer.
	Tokenizer string
	// NoBOS leaves BOS out of tokenizer_config.json, as Falcon-H1-Tiny's
	// tokenizer has none; otherwise <|endoftext|> is BOS as well as EOS.
	NoBOS bool
}

// TokenizerFiles are the tokenizer files a checkpoint may carry.
var TokenizerFiles = []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model", "vocab.json", "merges.txt"}

// Write writes the checkpoint into dir with its weights in format.
func (c Checkpoint) Write(dir string, format Format) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "config.json"), c.Config); err != nil {
		return err
	}
	if c.Tokenizer != "" {
		if err := copyTokenizer(c.Tokenizer, dir); err != nil {
			return err
		}
		return c.WriteWeights(dir, format)
	}
	if err := writeJSON(filepath.Join(dir, "tokenizer.json"), tokenizerJSON()); err != nil {
		return err
	}
	tc := map[string]any{"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "add_bos_token": false}
	if c.NoBOS {
		tc["bos_token"] = nil
	}
	if err := writeJSON(filepath.Join(dir, "tokenizer_config.json"), tc); err != nil {
		return err
	}
	return c.WriteWeights(dir, format)
}

// copyTokenizer copies the tokenizer files src has into dir.
func copyTokenizer(src, dir string) error {
	for _, name := range TokenizerFiles {
		b, err := os.ReadFile(filepath.Join(src, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// TokenizerSize is the size of the tokenizer in dir: one more than the
// largest id of tokenizer.json's vocabulary and added tokens (or of
// vocab.json without tokenizer.json).
func TokenizerSize(dir string) (int, error) {
	var tj struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
		Added []struct {
			ID int `json:"id"`
		} `json:"added_tokens"`
	}
	path := filepath.Join(dir, "tokenizer.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		path = filepath.Join(dir, "vocab.json")
		if b, err = os.ReadFile(path); err == nil {
			err = json.Unmarshal(b, &tj.Model.Vocab)
		}
	} else if err == nil {
		err = json.Unmarshal(b, &tj)
	}
	if err != nil {
		return 0, fmt.Errorf("tokenizer size of %s: %w", dir, err)
	}
	n := 0
	for _, id := range tj.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range tj.Added {
		n = max(n, a.ID+1)
	}
	return n, nil
}

// WriteWeights writes only the weight files.
func (c Checkpoint) WriteWeights(dir string, format Format) error {
	switch format {
	case Safetensors:
		return WriteSafetensors(filepath.Join(dir, "model.safetensors"), c.Dtype, c.Tensors)
	case Torch:
		return WriteTorch(filepath.Join(dir, "pytorch_model.bin"), c.Dtype, c.Tensors)
	case ShardedSafetensors:
		return c.writeShards(dir, "model", "safetensors", WriteSafetensors)
	case ShardedTorch:
		return c.writeShards(dir, "pytorch_model", "bin", WriteTorch)
	}
	return fmt.Errorf("weight format %q", format)
}

// writeShards splits the tensors, in name order, into two files and writes
// the index that maps each tensor to its file, as transformers does.
func (c Checkpoint) writeShards(dir, stem, ext string, write func(string, string, map[string]Tensor) error) error {
	names := runfile.SortedKeys(c.Tensors)
	shards := []map[string]Tensor{{}, {}}
	weightMap := map[string]string{}
	for i, n := range names {
		k := 0
		if i >= len(names)/2 {
			k = 1
		}
		shards[k][n] = c.Tensors[n]
		weightMap[n] = fmt.Sprintf("%s-%05d-of-%05d.%s", stem, k+1, len(shards), ext)
	}
	for k, sh := range shards {
		if err := write(filepath.Join(dir, fmt.Sprintf("%s-%05d-of-%05d.%s", stem, k+1, len(shards), ext)), c.Dtype, sh); err != nil {
			return err
		}
	}
	index := map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": weightMap}
	return writeJSON(filepath.Join(dir, stem+"."+ext+".index.json"), index)
}

// encode returns values as little-endian dtype bytes.
func encode(dtype string, vals []float32) []byte {
	var data []byte
	for _, v := range vals {
		switch dtype {
		case "F32":
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		case "F16":
			data = binary.LittleEndian.AppendUint16(data, float16.Fromfloat32(v).Bits())
		case "BF16":
			data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(v)>>16))
		}
	}
	return data
}

// WriteTorch writes tensors as torch.save writes a state dict: a zip
// (entries stored, not compressed) holding archive/data.pkl, a protocol 2
// pickle of an OrderedDict whose values are
// torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False,
// OrderedDict()) with each storage a persistent id ('storage',
// torch.<Type>Storage, key, 'cpu', numel), and archive/data/<key> holding
// the storage's bytes.
func WriteTorch(path, dtype string, tensors map[string]Tensor) error {
	storage := map[string]string{"F32": "FloatStorage", "F16": "HalfStorage", "BF16": "BFloat16Storage"}[dtype]
	if storage == "" {
		return fmt.Errorf("torch dtype %q", dtype)
	}
	var p pickler
	p.op(0x80, 2) // PROTO 2
	p.global("collections", "OrderedDict")
	p.op(')', 'R') // EMPTY_TUPLE, REDUCE: OrderedDict()
	p.op('(')      // MARK
	names := runfile.SortedKeys(tensors)
	for i, name := range names {
		t := tensors[name]
		p.str(name)
		p.global("torch._utils", "_rebuild_tensor_v2")
		p.op('(') // the arguments
		p.op('(')
		p.str("storage")
		p.global("torch", storage)
		p.str(fmt.Sprint(i))
		p.str("cpu")
		p.int(len(t.Values))
		p.op('t', 'Q') // TUPLE, BINPERSID
		p.int(0)       // storage offset
		p.op('(')
		for _, d := range t.Shape {
			p.int(int(d))
		}
		p.op('t', '(')
		stride := 1
		strides := make([]int, len(t.Shape))
		for k := len(t.Shape) - 1; k >= 0; k-- {
			strides[k] = stride
			stride *= int(t.Shape[k])
		}
		for _, s := range strides {
			p.int(s)
		}
		p.op('t', 0x89) // TUPLE, NEWFALSE (requires_grad)
		p.global("collections", "OrderedDict")
		p.op(')', 'R') // backward hooks
		p.op('t', 'R') // TUPLE of the arguments, REDUCE
	}
	p.op('u', '.') // SETITEMS, STOP

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	add := func(name string, data []byte) error {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: "archive/" + name, Method: zip.Store})
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	err = add("data.pkl", p.b)
	for i, name := range names {
		if err == nil {
			err = add(fmt.Sprintf("data/%d", i), encode(dtype, tensors[name].Values))
		}
	}
	if err == nil {
		err = add("byteorder", []byte("little"))
	}
	if err == nil {
		err = add("version", []byte("3\n"))
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// pickler writes the few pickle opcodes torch.save's state dicts use.
type pickler struct{ b []byte }

func (p *pickler) op(ops ...byte) { p.b = append(p.b, ops...) }

func (p *pickler) global(module, name string) {
	p.b = append(p.b, 'c')
	p.b = append(p.b, module+"\n"+name+"\n"...)
}

func (p *pickler) str(s string) { // BINUNICODE
	p.b = append(p.b, 'X')
	p.b = binary.LittleEndian.AppendUint32(p.b, uint32(len(s)))
	p.b = append(p.b, s...)
}

func (p *pickler) int(n int) { // BININT
	p.b = append(p.b, 'J')
	p.b = binary.LittleEndian.AppendUint32(p.b, uint32(int32(n)))
}
