// Package converttest writes tiny Hugging Face checkpoints (config.json,
// tokenizer.json, tokenizer_config.json, and weights in each format the
// converter reads) for tests of the converter, the model fetcher and the
// action. Checkpoint is any architecture's; Llama builds one for llama.
package converttest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/x448/float16"
)

// Llama describes a tiny LlamaForCausalLM.
type Llama struct {
	Hidden, Intermediate, Heads, KVHeads, Layers int
	Dtype                                        string // F32, F16 or BF16
	Seed                                         uint64
	// Tied shares the embedding with the output layer (no lm_head), as
	// SmolLM2 does.
	Tied bool
	// Tokenizer, when set, is a directory of real tokenizer files copied
	// into the checkpoint in place of the tiny test tokenizer.
	Tokenizer string
	// VocabSize is config.json's vocab_size and the embedding's rows; zero
	// means Vocab. With Tokenizer, TokenizerSize gives the tokenizer's own.
	VocabSize int
}

func (m Llama) vocab() int {
	if m.VocabSize > 0 {
		return m.VocabSize
	}
	return Vocab
}

// Small is a llama small enough for unit tests and large enough for Q8_0
// blocks (rows of 64 values).
var Small = Llama{Hidden: 64, Intermediate: 128, Heads: 4, KVHeads: 2, Layers: 2, Dtype: "BF16", Seed: 1}

// Tensor is one written tensor, with the float32 value of every element
// (exactly what the stored F16/BF16 value means).
type Tensor struct {
	Name   string
	Shape  []uint64
	Values []float32
}

// Vocab is the tokenizer's size: 256 byte tokens, a few merges, and
// <|endoftext|>, which is BOS and EOS.
const Vocab = 256 + len(mergeWords) + 1

var mergeWords = [...][2]string{{"t", "h"}, {"th", "e"}, {"Ġ", "t"}, {"a", "n"}, {"1", "0"}}

// Write writes the checkpoint into dir as model.safetensors and returns
// its tensors by HF name.
func (m Llama) Write(dir string) (map[string]Tensor, error) {
	c := m.Checkpoint()
	c.Tokenizer = m.Tokenizer
	return c.Tensors, c.Write(dir, Safetensors)
}

// Config is the checkpoint's config.json.
func (m Llama) Config() map[string]any {
	return map[string]any{
		"architectures":           []string{"LlamaForCausalLM"},
		"model_type":              "llama",
		"hidden_size":             m.Hidden,
		"intermediate_size":       m.Intermediate,
		"num_attention_heads":     m.Heads,
		"num_key_value_heads":     m.KVHeads,
		"num_hidden_layers":       m.Layers,
		"max_position_embeddings": 4096,
		"rms_norm_eps":            1e-5,
		"rope_theta":              10000.0,
		"vocab_size":              m.vocab(),
		"bos_token_id":            Vocab - 1,
		"eos_token_id":            Vocab - 1,
		"tie_word_embeddings":     m.Tied,
		"torch_dtype":             TorchDtype(m.Dtype),
	}
}

// Checkpoint returns the model's config and random weights.
func (m Llama) Checkpoint() Checkpoint {
	shapes := testmodel.Decoder{
		Hidden: m.Hidden, FFN: m.Intermediate, Layers: m.Layers, Heads: m.Heads, KVHeads: m.KVHeads,
		HeadDim: m.Hidden / m.Heads, Vocab: m.vocab(), Tied: m.Tied,
	}.Shapes()
	return Checkpoint{
		Config:  m.Config(),
		Dtype:   m.Dtype,
		Tensors: Random(m.Seed, m.Dtype, shapes, Init{NormMean: 1, NormStd: 0.05, Std: 0.2}),
	}
}

// Init says how Random draws values: 1-D tensors (norms) from
// N(NormMean, NormStd), others from N(0, Std), or as Custom says.
type Init struct {
	NormMean, NormStd, Std float64
	// Custom, when set and returning ok, gives a tensor's mean and
	// standard deviation by name.
	Custom func(name string, shape []uint64) (mean, std float64, ok bool)
}

// Random draws every tensor of shapes, rounded to dtype so that Values
// are exactly what the file stores. Tensors are drawn in name order from
// one stream: the same seed gives the same weights.
func Random(seed uint64, dtype string, shapes map[string][]uint64, init Init) map[string]Tensor {
	rng := rand.New(rand.NewPCG(seed, 2))
	tensors := map[string]Tensor{}
	for _, name := range runfile.SortedKeys(shapes) {
		shape := shapes[name]
		n := uint64(1)
		for _, d := range shape {
			n *= d
		}
		mean, std := 0.0, init.Std
		if len(shape) == 1 {
			mean, std = init.NormMean, init.NormStd
		}
		if init.Custom != nil {
			if m, s, ok := init.Custom(name, shape); ok {
				mean, std = m, s
			}
		}
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = roundTo(dtype, float32(mean)+float32(rng.NormFloat64()*std))
		}
		tensors[name] = Tensor{Name: name, Shape: shape, Values: vals}
	}
	return tensors
}

// TorchDtype is config.json's torch_dtype for a safetensors dtype.
func TorchDtype(dtype string) string {
	return map[string]string{"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype]
}

// roundTo makes v representable in dtype so Values are exact.
func roundTo(dtype string, v float32) float32 {
	switch dtype {
	case "F16":
		return float16.Fromfloat32(v).Float32()
	case "BF16":
		return math.Float32frombits(math.Float32bits(v) &^ 0xffff)
	}
	return v
}

// WriteSafetensors writes tensors in dtype: an 8-byte little-endian header
// length, the JSON header, then the raw little-endian values.
func WriteSafetensors(path, dtype string, tensors map[string]Tensor) error {
	if TorchDtype(dtype) == "" {
		return fmt.Errorf("safetensors dtype %q", dtype)
	}
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, name := range runfile.SortedKeys(tensors) {
		t := tensors[name]
		start := len(data)
		data = append(data, encode(dtype, t.Values)...)
		header[name] = map[string]any{"dtype": dtype, "shape": t.Shape, "data_offsets": []int{start, len(data)}}
	}
	hb, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hb)))
	out = append(append(out, hb...), data...)
	return os.WriteFile(path, out, 0o644)
}

// byteChars is GPT-2's byte-to-printable-rune table used by byte-level BPE.
func byteChars() []string {
	var printable []int
	for b := '!'; b <= '~'; b++ {
		printable = append(printable, int(b))
	}
	for b := 0xA1; b <= 0xAC; b++ {
		printable = append(printable, b)
	}
	for b := 0xAE; b <= 0xFF; b++ {
		printable = append(printable, b)
	}
	chars := make([]string, 256)
	next := 256
	for b := range 256 {
		if slices.Contains(printable, b) {
			chars[b] = string(rune(b))
		} else {
			chars[b] = string(rune(next))
			next++
		}
	}
	return chars
}

func tokenizerJSON() map[string]any {
	vocab := map[string]int{}
	for i, c := range byteChars() {
		vocab[c] = i
	}
	var merges []string
	for i, m := range mergeWords {
		vocab[m[0]+m[1]] = 256 + i
		merges = append(merges, m[0]+" "+m[1])
	}
	eot := Vocab - 1
	return map[string]any{
		"version": "1.0",
		"added_tokens": []map[string]any{{
			"id": eot, "content": "<|endoftext|>", "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true,
		}},
		"normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []map[string]any{
			{"type": "Digits", "individual_digits": true},
			{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		}},
		"decoder": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false,
			"vocab": vocab, "merges": merges,
		},
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
