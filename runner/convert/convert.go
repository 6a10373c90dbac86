// Package convert turns a Hugging Face safetensors checkpoint (config.json,
// tokenizer.json, tokenizer_config.json, *.safetensors) into a GGUF file
// that llama.cpp loads.
//
// The model-specific work (tensor names, key-values, the llama q/k
// permutation, the tokenizer) is done by the ollama module's convert
// package. Its ConvertModel always writes 2-D weights as F16 (BF16 when the
// source is BF16), so this package reads the safetensors itself and hands
// ollama tensors that write the requested type: f32 is an exact widening of
// bf16/f16 weights, q8_0 is ggml's reference block quantization.
package convert

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ollama/ollama/convert"
	"github.com/ollama/ollama/fs/ggml"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// Dtypes are the output types Convert writes.
var Dtypes = []string{"f32", "f16", "bf16", "q8_0"}

// Options control a conversion.
type Options struct {
	Dtype  string // f32 (default), f16, bf16 or q8_0
	Source string // recorded in the run header: hub repo@revision or directory
}

// Result describes the written GGUF.
type Result struct {
	Path       string
	SHA256     string
	Arch       string
	Tensors    int
	Conversion runfile.Conversion
}

// converter is the part of ollama's per-architecture converters used here;
// every converter LoadModelMetadata returns implements it.
type converter interface {
	KV(*convert.Tokenizer) convert.KV
	Tensors([]convert.Tensor) []*ggml.Tensor
	Replacements() []string
}

// Dir converts the checkpoint in directory dir.
func Dir(dir, out string, opts Options) (Result, error) {
	if opts.Source == "" {
		opts.Source = dir
	}
	res, err := Convert(os.DirFS(dir), out, opts)
	if err != nil {
		return res, fmt.Errorf("convert %s: %w", dir, err)
	}
	return res, nil
}

// Convert writes the checkpoint in fsys to out as GGUF. The file appears
// whole or not at all: it is written next to out and renamed.
func Convert(fsys fs.FS, out string, opts Options) (Result, error) {
	if opts.Dtype == "" {
		opts.Dtype = "f32"
	}
	kind, fileType, err := outputKind(opts.Dtype)
	if err != nil {
		return Result{}, err
	}
	for _, name := range []string{"config.json", "tokenizer.json"} {
		if _, err := fs.Stat(fsys, name); err != nil {
			return Result{}, fmt.Errorf("checkpoint has no %s: %w", name, err)
		}
	}
	mkv, tok, err := convert.LoadModelMetadata(fsys)
	if err != nil {
		return Result{}, fmt.Errorf("read config and tokenizer: %w", err)
	}
	conv, ok := mkv.(converter)
	if !ok {
		return Result{}, fmt.Errorf("architecture converter %T cannot convert tensors", mkv)
	}
	pre, err := preTokenizer(fsys, tok.Pre)
	if err != nil {
		return Result{}, err
	}
	tok.Pre = pre

	src, err := readSafetensors(fsys, strings.NewReplacer(conv.Replacements()...), kind)
	if err != nil {
		return Result{}, err
	}
	conversion := runfile.Conversion{From: "safetensors", Tool: Tool() + " pre=" + pre, Dtype: opts.Dtype, Source: opts.Source}
	record, err := json.Marshal(conversion)
	if err != nil {
		return Result{}, err
	}
	kv := conv.KV(tok)
	kv["general.file_type"] = uint32(fileType)
	// The GGUF carries its own provenance, so a copy scored anywhere can
	// still say where it came from (see ReadConversion).
	kv[ConversionKey] = string(record)
	ts := conv.Tensors(src)
	for _, t := range ts {
		// GGUF lists dimensions fastest first; safetensors slowest first.
		t.Shape = slices.Clone(t.Shape)
		slices.Reverse(t.Shape)
	}

	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return Result{}, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".*.partial")
	if err != nil {
		return Result{}, err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := ggml.WriteGGUF(tmp, kv, ts); err != nil {
		tmp.Close()
		return Result{}, fmt.Errorf("write %s: %w", out, err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return Result{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, tmp); err != nil {
		tmp.Close()
		return Result{}, fmt.Errorf("hash %s: %w", out, err)
	}
	if err := tmp.Close(); err != nil {
		return Result{}, fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return Result{}, err
	}
	return Result{
		Path:       out,
		SHA256:     hex.EncodeToString(h.Sum(nil)),
		Arch:       kv.Architecture(),
		Tensors:    len(ts),
		Conversion: conversion,
	}, nil
}

// ConversionKey is the GGUF metadata key holding the conversion record as
// JSON.
const ConversionKey = "general.udgam_ci.conversion"

// ReadConversion returns the conversion record of a GGUF this package
// wrote, or nil for any other GGUF.
func ReadConversion(path string) (c *runfile.Conversion, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The decoder trusts sizes read from the file.
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("read %s: malformed GGUF: %v", path, r)
		}
	}()
	g, err := ggml.Decode(f, 0) // arrays (the vocabulary) are skipped
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	v := g.KV().String(ConversionKey)
	if v == "" {
		return nil, nil
	}
	c = new(runfile.Conversion)
	if err := json.Unmarshal([]byte(v), c); err != nil {
		return nil, fmt.Errorf("read %s: %s: %w", path, ConversionKey, err)
	}
	return c, nil
}

// Tool names the converter: udgam-ci's tensor writer around ollama's
// convert package, whose version EngineVersion names.
func Tool() string {
	return "udgam-ci " + runner.Version + " convert, " + runner.EngineVersion()
}

func outputKind(dtype string) (ggml.TensorType, ggml.FileType, error) {
	switch dtype {
	case "f32":
		return ggml.TensorTypeF32, ggml.FileTypeF32, nil
	case "f16":
		return ggml.TensorTypeF16, ggml.FileTypeF16, nil
	case "bf16":
		return ggml.TensorTypeBF16, ggml.FileTypeBF16, nil
	case "q8_0":
		return ggml.TensorTypeQ8_0, ggml.FileTypeQ8_0, nil
	}
	return 0, 0, fmt.Errorf("dtype %q: want one of %s", dtype, strings.Join(Dtypes, ", "))
}

// preTokenizer corrects the pre-tokenizer name ollama infers. ollama only
// recognises pre-tokenizers by a hash of their Split regexes and otherwise
// says "default", which llama.cpp reads as a different regex. A byte-level
// BPE preceded by single-digit splitting (SmolLM, StarCoder) is llama.cpp's
// "smollm"; plain byte-level BPE is "gpt-2". Digit splitting decides how
// numbers tokenise, which the probes measure.
func preTokenizer(fsys fs.FS, inferred string) (string, error) {
	if inferred != "default" {
		return inferred, nil
	}
	b, err := fs.ReadFile(fsys, "tokenizer.json")
	if err != nil {
		return "", err
	}
	var tj struct {
		Model struct {
			Type string `json:"type"`
		} `json:"model"`
		PreTokenizer *preTok `json:"pre_tokenizer"`
	}
	if err := json.Unmarshal(b, &tj); err != nil {
		return "", fmt.Errorf("tokenizer.json: %w", err)
	}
	if tj.Model.Type != "BPE" || tj.PreTokenizer == nil {
		return inferred, nil
	}
	steps := []preTok{*tj.PreTokenizer}
	if tj.PreTokenizer.Type == "Sequence" {
		steps = tj.PreTokenizer.PreTokenizers
	}
	var types []string
	for _, s := range steps {
		t := s.Type
		if t == "Digits" && s.IndividualDigits {
			t = "Digits1"
		}
		types = append(types, t)
	}
	switch strings.Join(types, ",") {
	case "Digits1,ByteLevel":
		return "smollm", nil
	case "ByteLevel":
		return "gpt-2", nil
	}
	return inferred, nil
}

type preTok struct {
	Type             string   `json:"type"`
	IndividualDigits bool     `json:"individual_digits"`
	PreTokenizers    []preTok `json:"pretokenizers"`
}

// header is one entry of a safetensors JSON header.
type header struct {
	Dtype   string   `json:"dtype"`
	Shape   []uint64 `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

var sourceSize = map[string]int64{"F32": 4, "F16": 2, "BF16": 2}

// readSafetensors lists the tensors of every *.safetensors file in fsys,
// names mapped to GGUF by rep, each to be written as kind where the layout
// allows it.
func readSafetensors(fsys fs.FS, rep *strings.Replacer, kind ggml.TensorType) ([]convert.Tensor, error) {
	files, err := fs.Glob(fsys, "*.safetensors")
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errors.New("checkpoint has no *.safetensors files")
	}
	var out []convert.Tensor
	seen := map[string]string{}
	for _, path := range files {
		hdrs, dataStart, size, err := readHeader(fsys, path)
		if err != nil {
			return nil, err
		}
		for _, name := range slices.Sorted(maps.Keys(hdrs)) {
			h := hdrs[name]
			if name == "__metadata__" {
				continue
			}
			elem, ok := sourceSize[h.Dtype]
			if !ok {
				return nil, fmt.Errorf("%s: tensor %s has dtype %q; want F32, F16 or BF16", path, name, h.Dtype)
			}
			if len(h.Shape) == 0 {
				return nil, fmt.Errorf("%s: tensor %s has no shape", path, name)
			}
			n := int64(1)
			for _, d := range h.Shape {
				n *= int64(d)
			}
			if h.Offsets[1]-h.Offsets[0] != n*elem || h.Offsets[0] < 0 || dataStart+h.Offsets[1] > size {
				return nil, fmt.Errorf("%s: tensor %s: offsets %v do not hold %d %s values", path, name, h.Offsets, n, h.Dtype)
			}
			gname := rep.Replace(name)
			if prev, dup := seen[gname]; dup {
				return nil, fmt.Errorf("%s: tensor %s maps to %s, as %s does", path, name, gname, prev)
			}
			seen[gname] = name
			out = append(out, &tensor{
				fsys: fsys, path: path, dtype: h.Dtype,
				offset: dataStart + h.Offsets[0], count: n,
				name: gname, shape: slices.Clone(h.Shape),
				kind: tensorKind(gname, h.Shape, kind),
			})
		}
	}
	return out, nil
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

// tensorKind picks a tensor's output type. Like llama.cpp's converter, 1-D
// tensors (norms) and biases stay F32, and a row that is not a whole number
// of quantization blocks falls back to F16.
func tensorKind(name string, shape []uint64, want ggml.TensorType) ggml.TensorType {
	if len(shape) < 2 || strings.HasSuffix(name, ".bias") || strings.HasSuffix(name, ".ffn_gate_inp.weight") {
		return ggml.TensorTypeF32
	}
	if want == ggml.TensorTypeQ8_0 && shape[len(shape)-1]%q8Block != 0 {
		return ggml.TensorTypeF16
	}
	return want
}
