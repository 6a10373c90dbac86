// Package converttest writes tiny Hugging Face checkpoints (config.json,
// tokenizer.json, tokenizer_config.json, model.safetensors) for tests of
// the converter, the model fetcher and the action.
package converttest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

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

// Write writes the checkpoint into dir and returns its tensors by HF name.
func (m Llama) Write(dir string) (map[string]Tensor, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	config := map[string]any{
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
		"vocab_size":              Vocab,
		"bos_token_id":            Vocab - 1,
		"eos_token_id":            Vocab - 1,
		"tie_word_embeddings":     m.Tied,
		"torch_dtype":             map[string]string{"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[m.Dtype],
	}
	if err := writeJSON(filepath.Join(dir, "config.json"), config); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(dir, "tokenizer.json"), tokenizerJSON()); err != nil {
		return nil, err
	}
	tc := map[string]any{"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "add_bos_token": false}
	if err := writeJSON(filepath.Join(dir, "tokenizer_config.json"), tc); err != nil {
		return nil, err
	}

	rng := rand.New(rand.NewPCG(m.Seed, 2))
	h, kv := uint64(m.Hidden), uint64(m.Hidden/m.Heads*m.KVHeads)
	shapes := map[string][]uint64{
		"model.embed_tokens.weight": {uint64(Vocab), h},
		"model.norm.weight":         {h},
	}
	if !m.Tied {
		shapes["lm_head.weight"] = []uint64{uint64(Vocab), h}
	}
	for l := range m.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		shapes[p+"input_layernorm.weight"] = []uint64{h}
		shapes[p+"post_attention_layernorm.weight"] = []uint64{h}
		shapes[p+"self_attn.q_proj.weight"] = []uint64{h, h}
		shapes[p+"self_attn.k_proj.weight"] = []uint64{kv, h}
		shapes[p+"self_attn.v_proj.weight"] = []uint64{kv, h}
		shapes[p+"self_attn.o_proj.weight"] = []uint64{h, h}
		shapes[p+"mlp.gate_proj.weight"] = []uint64{uint64(m.Intermediate), h}
		shapes[p+"mlp.up_proj.weight"] = []uint64{uint64(m.Intermediate), h}
		shapes[p+"mlp.down_proj.weight"] = []uint64{h, uint64(m.Intermediate)}
	}
	tensors := map[string]Tensor{}
	for _, name := range runfile.SortedKeys(shapes) {
		shape := shapes[name]
		n := uint64(1)
		for _, d := range shape {
			n *= d
		}
		vals := make([]float32, n)
		for i := range vals {
			if len(shape) == 1 {
				vals[i] = 1 + float32(rng.NormFloat64()*0.05)
			} else {
				vals[i] = float32(rng.NormFloat64() * 0.2)
			}
			vals[i] = roundTo(m.Dtype, vals[i])
		}
		tensors[name] = Tensor{Name: name, Shape: shape, Values: vals}
	}
	return tensors, WriteSafetensors(filepath.Join(dir, "model.safetensors"), m.Dtype, tensors)
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
	size := map[string]int{"F32": 4, "F16": 2, "BF16": 2}[dtype]
	if size == 0 {
		return fmt.Errorf("safetensors dtype %q", dtype)
	}
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, name := range runfile.SortedKeys(tensors) {
		t := tensors[name]
		start := len(data)
		for _, v := range t.Values {
			switch dtype {
			case "F32":
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
			case "F16":
				data = binary.LittleEndian.AppendUint16(data, float16.Fromfloat32(v).Bits())
			case "BF16":
				data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(v)>>16))
			}
		}
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
