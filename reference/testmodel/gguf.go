package testmodel

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/udgamlabs/udgam-ci/ggufspec"
	"github.com/udgamlabs/udgam-ci/ggufspec/tokspec"
	"github.com/udgamlabs/udgam-ci/internal/atomicfile"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/x448/float16"
)

// WriteOption changes how a model is written to GGUF.
type WriteOption func(*writeConfig)

type writeConfig struct {
	f16  bool
	name string
}

// WithF16 stores the weight matrices as F16 (1-D tensors stay F32, as
// llama.cpp's converters do). The random llama's weights are F16 values to
// begin with, so its F16 and F32 files hold the same numbers.
func WithF16() WriteOption { return func(c *writeConfig) { c.f16 = true } }

// WithName sets general.name.
func WithName(name string) WriteOption { return func(c *writeConfig) { c.name = name } }

func newWriteConfig(opts []WriteOption) writeConfig {
	var c writeConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

// tensorSpec is one tensor of a GGUF file and the way to produce its values
// row by row, so that large tensors are generated while they are written.
type tensorSpec struct {
	name  string
	shape []uint64 // ggml order: shape[0] values are contiguous (one row)
	// row fills dst, of length shape[0], with row r.
	row func(r int, dst []float32)
}

func (t tensorSpec) rows() int {
	n := 1
	for _, d := range t.shape[1:] {
		n *= int(d)
	}
	return n
}

func (t tensorSpec) elements() uint64 {
	n := uint64(1)
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// ggufLayout is a whole GGUF file before it is written: metadata and tensors.
type ggufLayout struct {
	kv      ggml.KV
	tensors []tensorSpec
	f16     bool
}

func (l *ggufLayout) kind(t tensorSpec) ggml.TensorType {
	if l.f16 && len(t.shape) > 1 {
		return ggml.TensorTypeF16
	}
	return ggml.TensorTypeF32
}

// write writes the file through atomicfile, so a failed write never leaves
// a partial file under path.
func (l *ggufLayout) write(path string) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer f.Discard()
	if err := ggml.WriteGGUF(f.File, l.kv, l.ggmlTensors()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

// ggmlTensors describes the tensors for ollama's writer, each streaming its
// values when written.
func (l *ggufLayout) ggmlTensors() []*ggml.Tensor {
	ts := make([]*ggml.Tensor, len(l.tensors))
	for i, t := range l.tensors {
		kind := l.kind(t)
		ts[i] = &ggml.Tensor{
			Name:     t.name,
			Kind:     uint32(kind),
			Shape:    t.shape,
			WriterTo: tensorWriter{spec: t, f16: kind == ggml.TensorTypeF16},
		}
	}
	return ts
}

// tensorWriter streams one tensor's rows, converted to its file type.
type tensorWriter struct {
	spec tensorSpec
	f16  bool
}

func (w tensorWriter) WriteTo(dst io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(dst, 256<<10)
	width := int(w.spec.shape[0])
	row := make([]float32, width)
	size := 4
	if w.f16 {
		size = 2
	}
	buf := make([]byte, width*size)
	var n int64
	for r := range w.spec.rows() {
		w.spec.row(r, row)
		for i, v := range row {
			if w.f16 {
				binary.LittleEndian.PutUint16(buf[2*i:], uint16(float16.Fromfloat32(v)))
			} else {
				binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
			}
		}
		m, err := bw.Write(buf)
		n += int64(m)
		if err != nil {
			return n, fmt.Errorf("tensor %s: %w", w.spec.name, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("tensor %s: %w", w.spec.name, err)
	}
	return n, nil
}

// info describes the file as runner.ReadInfo reads it, less path and hash.
func (l *ggufLayout) info() runner.Info {
	counts := map[string]int{}
	elems := map[string]uint64{}
	var params uint64
	for _, t := range l.tensors {
		k := l.kind(t).String()
		counts[k]++
		elems[k] += t.elements()
		params += t.elements()
	}
	var dtype string
	for _, k := range []string{"F32", "F16"} { // F32 wins ties, as listed first
		if elems[k] > elems[dtype] {
			dtype = k
		}
	}
	// The file type, where written, names the file (runner's fileType).
	if ft, ok := l.kv["general.file_type"].(uint32); ok {
		dtype = map[uint32]string{0: "F32", 1: "F16"}[ft]
	}
	// The layout holds plain slices; ggml.KV's array getters expect the
	// decoder's types, so read them directly.
	tokens, _ := l.kv["tokenizer.ggml.tokens"].([]string)
	merges, _ := l.kv["tokenizer.ggml.merges"].([]string)
	types, _ := l.kv["tokenizer.ggml.token_type"].([]int32)
	scores, _ := l.kv["tokenizer.ggml.scores"].([]float32)
	control, user := runner.SpecialTokens(tokens, types)
	special := map[string]any{}
	for _, k := range runner.TokenizerSpecialKeys {
		if v, ok := l.kv[k]; ok {
			special[k] = v
		}
	}
	return runner.Info{
		ControlTokens:      control,
		UserTokens:         user,
		Name:               l.kv.String("general.name"),
		Arch:               l.kv.Architecture(),
		Params:             params,
		Dtype:              dtype,
		TensorTypes:        counts,
		TensorParams:       elems,
		Tokenizer:          runner.NewTokenizerFields(l.kv.String("tokenizer.ggml.model"), l.kv.String("tokenizer.ggml.pre"), tokens, merges, scores, types, special),
		VocabSize:          len(tokens),
		ContextLength:      int(l.kv.Uint("context_length")),
		BOS:                int32(l.kv.Uint("tokenizer.ggml.bos_token_id")),
		EOS:                int32(l.kv.Uint("tokenizer.ggml.eos_token_id")),
		AddBOS:             l.kv.Bool("tokenizer.ggml.add_bos_token"),
		TokenizerModel:     l.kv.String("tokenizer.ggml.model"),
		TokenizerPre:       l.kv.String("tokenizer.ggml.pre"),
		TokenizerSHA256:    runner.WithSpec(runner.TokenizerSHA256(l.kv.String("tokenizer.ggml.model"), l.kv.String("tokenizer.ggml.pre"), tokens, merges, types), l.kv.String(tokspec.Key)),
		AddSpacePrefix:     runner.AddSpacePrefix(l.kv.String("tokenizer.ggml.model"), l.kv),
		BOSText:            runner.TokenText(tokens, int32(l.kv.Uint("tokenizer.ggml.bos_token_id"))),
		ChatTemplateSHA256: runner.ChatTemplateSHA256(l.kv.String(ggufspec.ChatTemplateKey)),
	}
}

// llamaShapeKV is the llama architecture's hyper-parameters.
func llamaShapeKV(s Shape, eps float32, ropeBase float32) ggml.KV {
	return ggml.KV{
		"general.architecture":                   "llama",
		"general.file_type":                      uint32(0),
		"llama.context_length":                   uint32(s.Context),
		"llama.embedding_length":                 uint32(s.Embd),
		"llama.block_count":                      uint32(s.Layers),
		"llama.feed_forward_length":              uint32(s.FFN),
		"llama.attention.head_count":             uint32(s.Heads),
		"llama.attention.head_count_kv":          uint32(s.KVHeads),
		"llama.attention.layer_norm_rms_epsilon": eps,
		"llama.rope.dimension_count":             uint32(s.Embd / s.Heads),
		"llama.rope.freq_base":                   ropeBase,
		"llama.vocab_size":                       uint32(s.Vocab),
	}
}
