package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Weight formats a checkpoint may hold, in the order they are looked for:
// like transformers, safetensors wins when both are present.
const (
	FormatSafetensors = "safetensors"
	FormatTorch       = "pytorch"
)

// sourceTensor is one checkpoint tensor: where it is and how to read it.
type sourceTensor struct {
	file  string
	dtype string // as the file names it: F32, F16, BF16 (others fail on read)
	shape []uint64
	read  func() ([]float32, error)
}

// weightSet is the Weights of one checkpoint. It remembers which tensors
// were read, so that the pipeline can refuse a conversion that left a
// weight out.
type weightSet struct {
	format  string
	files   []string // weight files, for the conversion record
	tensors map[string]*sourceTensor
	names   []string
	closers []func() error

	mu   sync.Mutex
	read map[string]bool
}

func newWeightSet(format string) *weightSet {
	return &weightSet{format: format, tensors: map[string]*sourceTensor{}, read: map[string]bool{}}
}

// add registers a tensor; the same name twice (in two shards) is an error.
func (w *weightSet) add(name string, t *sourceTensor) error {
	if prev, dup := w.tensors[name]; dup {
		return fmt.Errorf("tensor %s is in both %s and %s", name, prev.file, t.file)
	}
	w.tensors[name] = t
	return nil
}

func (w *weightSet) done() {
	w.names = make([]string, 0, len(w.tensors))
	for n := range w.tensors {
		w.names = append(w.names, n)
	}
	sort.Strings(w.names)
}

func (w *weightSet) Names() []string { return slices.Clone(w.names) }

func (w *weightSet) Shape(name string) []uint64 {
	if t, ok := w.tensors[name]; ok {
		return slices.Clone(t.shape)
	}
	return nil
}

func (w *weightSet) Read(name string) ([]float32, error) {
	t, ok := w.tensors[name]
	if !ok {
		return nil, fmt.Errorf("checkpoint has no tensor %s", name)
	}
	vals, err := t.read()
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %s: %w", t.file, name, err)
	}
	w.mu.Lock()
	w.read[name] = true
	w.mu.Unlock()
	return vals, nil
}

// Unread lists the tensors nobody read, less those on the ignore list.
func (w *weightSet) Unread() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, n := range w.names {
		if !w.read[n] && !Ignored(n) {
			out = append(out, n)
		}
	}
	return out
}

func (w *weightSet) Close() error {
	var errs []error
	for _, c := range w.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// ignored are checkpoint entries that are not weights of the model but
// buffers PyTorch saved along with them; a conversion may leave them out.
//   - rotary_emb.inv_freq: RoPE frequencies, recomputed from rope_theta.
//   - GPT-2's attn.bias and attn.masked_bias: the causal mask and its fill
//     value (the real biases are attn.c_attn.bias and attn.c_proj.bias).
//   - GPT-NeoX's attention.bias and attention.masked_bias: the same (the
//     real biases are query_key_value.bias and dense.bias).
var ignored = []*regexp.Regexp{
	regexp.MustCompile(`(^|\.)rotary_emb\.inv_freq$`),
	regexp.MustCompile(`^(transformer\.)?h\.\d+\.attn\.(masked_)?bias$`),
	regexp.MustCompile(`^gpt_neox\.layers\.\d+\.attention\.(masked_)?bias$`),
}

// Ignored reports whether a checkpoint tensor is a buffer that conversion
// may leave out (see ignored).
func Ignored(name string) bool {
	for _, re := range ignored {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// OpenWeights finds and indexes the weights of the checkpoint in fsys
// (headers only; values are read when asked for). It takes, in this order:
// model.safetensors.index.json and its shards, *.safetensors,
// pytorch_model.bin.index.json and its shards, pytorch_model.bin.
func OpenWeights(fsys fs.FS) (*weightSet, error) {
	exists := func(name string) bool { _, err := fs.Stat(fsys, name); return err == nil }
	var (
		w   *weightSet
		err error
	)
	st, _ := fs.Glob(fsys, "*.safetensors")
	switch {
	case exists(safetensorsIndex):
		w, err = openShards(fsys, safetensorsIndex, FormatSafetensors, readSafetensorsFile)
	case len(st) > 0:
		w = newWeightSet(FormatSafetensors)
		for _, f := range st {
			if err = readSafetensorsFile(fsys, f, w); err != nil {
				break
			}
		}
	case exists(torchIndex):
		w, err = openShards(fsys, torchIndex, FormatTorch, readTorchFile)
	case exists("pytorch_model.bin"):
		w = newWeightSet(FormatTorch)
		err = readTorchFile(fsys, "pytorch_model.bin", w)
	default:
		return nil, errors.New("checkpoint has no weights: want model.safetensors (or *.safetensors, or model.safetensors.index.json and its shards) or pytorch_model.bin (or pytorch_model.bin.index.json and its shards)")
	}
	if err != nil {
		if w != nil {
			w.Close()
		}
		return nil, err
	}
	if len(w.tensors) == 0 {
		w.Close()
		return nil, fmt.Errorf("checkpoint's %s files hold no tensors", w.format)
	}
	w.done()
	return w, nil
}

const (
	safetensorsIndex = "model.safetensors.index.json"
	torchIndex       = "pytorch_model.bin.index.json"
)

// openShards reads a sharded checkpoint: every shard the index lists must
// exist, and every tensor must be in the shard the index names, no more and
// no fewer.
func openShards(fsys fs.FS, index, format string, readFile func(fs.FS, string, *weightSet) error) (*weightSet, error) {
	b, err := fs.ReadFile(fsys, index)
	if err != nil {
		return nil, err
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("%s: %w", index, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("%s: weight_map is empty", index)
	}
	var shards []string
	for _, s := range idx.WeightMap {
		if !slices.Contains(shards, s) {
			shards = append(shards, s)
		}
	}
	sort.Strings(shards)
	w := newWeightSet(format)
	for _, s := range shards {
		if strings.Contains(s, "/") || strings.Contains(s, `\`) {
			return w, fmt.Errorf("%s: shard %q is not a file next to the index", index, s)
		}
		if _, err := fs.Stat(fsys, s); err != nil {
			return w, fmt.Errorf("%s lists shard %s, which the checkpoint does not have: %w", index, s, err)
		}
		if err := readFile(fsys, s, w); err != nil {
			return w, err
		}
	}
	var bad []string
	for name, t := range w.tensors {
		if want, ok := idx.WeightMap[name]; !ok {
			bad = append(bad, fmt.Sprintf("%s is in %s but not in the index", name, t.file))
		} else if want != t.file {
			bad = append(bad, fmt.Sprintf("%s is in %s, the index says %s", name, t.file, want))
		}
	}
	for name, s := range idx.WeightMap {
		if _, ok := w.tensors[name]; !ok {
			bad = append(bad, fmt.Sprintf("%s is not in %s, where the index puts it", name, s))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return w, fmt.Errorf("%s does not match its shards: %s", index, strings.Join(bad, "; "))
	}
	return w, nil
}

// Take returns checkpoint tensor hf as GGUF tensor name, after checking
// that it exists and, when shape is given, has that shape (slowest first).
func Take(w Weights, hf, name string, shape ...uint64) (Tensor, error) {
	got := w.Shape(hf)
	if got == nil {
		return Tensor{}, fmt.Errorf("checkpoint has no tensor %s", hf)
	}
	if len(shape) > 0 && !slices.Equal(got, shape) {
		return Tensor{}, fmt.Errorf("tensor %s has shape %v; the config implies %v", hf, got, shape)
	}
	return Tensor{Name: name, Shape: got, Read: func() ([]float32, error) { return w.Read(hf) }}, nil
}

// A Taker takes checkpoint tensors one after another, as Take does, and
// keeps the first error, so a converter lists its tensors and checks once.
type Taker struct {
	W Weights
	// Names are the architecture's renames, for Named.
	Names tensorNames
	err   error
}

// Take is Take(t.W, hf, name, shape...); after an error it returns an
// empty Tensor and Err reports the first.
func (t *Taker) Take(hf, name string, shape ...uint64) Tensor {
	x, err := Take(t.W, hf, name, shape...)
	if err != nil && t.err == nil {
		t.err = err
	}
	return x
}

// Err is the first error of Take.
func (t *Taker) Err() error { return t.err }

// Map returns t with its values passed through fn when read.
func (t Tensor) Map(fn func([]float32) ([]float32, error)) Tensor {
	read := t.Read
	t.Read = func() ([]float32, error) {
		v, err := read()
		if err != nil {
			return nil, err
		}
		return fn(v)
	}
	return t
}
