// Package convert turns a Hugging Face checkpoint (config.json, the
// tokenizer files, and safetensors or pytorch_model.bin weights, whole or
// sharded) into a GGUF file that llama.cpp loads.
//
// The pipeline is: read config.json, find the Architecture for its class
// (Lookup; anything else is refused with the supported list), index the
// weights, convert the tokenizer, let the architecture map config and
// weights to GGUF key-values and tensors, pick each tensor's output type,
// and write the file whole or not at all. A weight the architecture did not
// read fails the conversion: a silently dropped weight would change the
// model.
package convert

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/udgamlabs/udgam-ci/convert/tokenizer"
	"github.com/udgamlabs/udgam-ci/ggufspec"
	"github.com/udgamlabs/udgam-ci/internal/atomicfile"
	"github.com/udgamlabs/udgam-ci/internal/release"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Dtypes are the output types Convert writes; DefaultDtype is the one the
// CLI and the Action write unless told (f32 widens bf16 and f16 exactly).
var Dtypes = []string{"f32", "f16", "bf16", "q8_0"}

const DefaultDtype = "f32"

// Options control a conversion.
type Options struct {
	Dtype  string // f32 (default), f16, bf16 or q8_0
	Source string // recorded in the run header: hub repo@revision or directory
	// Subfolder is the checkpoint's directory inside the given one, for
	// repositories that keep it below the top level.
	Subfolder string
	// AllowUnverifiedTokenizer converts a tokenizer whose equality with
	// the Hugging Face tokenizer is not established, recording why
	// (tokspec.Spec.Unverified) instead of refusing.
	AllowUnverifiedTokenizer bool
}

// Result describes the written GGUF.
type Result struct {
	Path       string
	SHA256     string
	Arch       string
	Tensors    int
	Conversion runfile.Conversion
	Tokenizer  *tokenizer.Result // what the tokenizer conversion decided
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

// ReadConfig reads and parses config.json.
func ReadConfig(fsys fs.FS) (Config, error) {
	b, err := fs.ReadFile(fsys, "config.json")
	if err != nil {
		return Config{}, fmt.Errorf("checkpoint has no config.json: %w", err)
	}
	return ParseConfig(b)
}

// Check reads config.json and says whether the converter takes its
// architecture, so that a fetch can refuse before downloading weights.
func Check(fsys fs.FS) (*Architecture, error) {
	cfg, err := ReadConfig(fsys)
	if err != nil {
		return nil, err
	}
	return Lookup(cfg)
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
	if opts.Subfolder != "" {
		sub := path.Clean(opts.Subfolder)
		if !fs.ValidPath(sub) || sub == "." {
			return Result{}, fmt.Errorf("subfolder %q is not a relative path inside the checkpoint", opts.Subfolder)
		}
		if fsys, err = fs.Sub(fsys, sub); err != nil {
			return Result{}, err
		}
	}
	cfg, err := ReadConfig(fsys)
	if err != nil {
		return Result{}, err
	}
	arch, err := Lookup(cfg)
	if err != nil {
		return Result{}, err
	}
	w, err := OpenWeights(fsys)
	if err != nil {
		return Result{}, err
	}
	defer w.Close()
	vocab := 0
	if err := cfg.Get("vocab_size", &vocab); err != nil {
		return Result{}, err
	}
	tok, tokKV, err := convertTokenizer(fsys, vocab, opts.AllowUnverifiedTokenizer)
	if err != nil {
		return Result{}, err
	}
	kv, tensors, err := arch.Convert(cfg, w)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", cfg.Classes[0], err)
	}

	conversion := runfile.Conversion{From: w.format, Tool: Tool() + " pre=" + tok.Spec.Pre, Dtype: opts.Dtype, Source: opts.Source, Warning: strings.Join(tok.Warnings, "; ")}
	record, err := json.Marshal(conversion)
	if err != nil {
		return Result{}, err
	}
	all := KV{}
	for k, v := range kv {
		all[k] = v
	}
	if a, ok := all["general.architecture"]; ok && a != arch.GGUF {
		return Result{}, fmt.Errorf("%s: converter set general.architecture %v, its GGUF name is %s", cfg.Classes[0], a, arch.GGUF)
	}
	all["general.architecture"] = arch.GGUF
	for k, v := range tokKV {
		if _, dup := all[k]; dup {
			return Result{}, fmt.Errorf("%s: converter set %s, which the tokenizer sets", cfg.Classes[0], k)
		}
		all[k] = v
	}
	all["general.file_type"] = uint32(fileType)
	all["general.quantization_version"] = uint32(2)
	// The GGUF carries its own provenance, so a copy scored anywhere can
	// still say where it came from (see ReadConversion).
	all[ConversionKey] = string(record)

	ts, err := ggufTensors(tensors, kind)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", cfg.Classes[0], err)
	}
	sum, err := writeWhole(out, func(f *os.File) error {
		if err := ggml.WriteGGUF(f, ggml.KV(all), ts); err != nil {
			return err
		}
		if left := w.Unread(); len(left) > 0 {
			return fmt.Errorf("%s: the conversion did not use %d checkpoint tensor(s): %s", cfg.Classes[0], len(left), strings.Join(left, ", "))
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	return Result{
		Path:       out,
		SHA256:     sum,
		Arch:       arch.GGUF,
		Tensors:    len(ts),
		Conversion: conversion,
		Tokenizer:  tok,
	}, nil
}

// ggufTensors checks an architecture's tensors and gives each its writer
// and output type.
func ggufTensors(tensors []Tensor, want ggml.TensorType) ([]*ggml.Tensor, error) {
	seen := map[string]bool{}
	var out []*ggml.Tensor
	for _, t := range tensors {
		if t.Name == "" || t.Read == nil || len(t.Shape) == 0 {
			return nil, fmt.Errorf("tensor %q: no name, shape or values", t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("tensor %s written twice", t.Name)
		}
		seen[t.Name] = true
		kind := OutputType(t, want)
		// GGUF lists dimensions fastest first; Tensor.Shape slowest first.
		shape := slices.Clone(t.Shape)
		slices.Reverse(shape)
		out = append(out, &ggml.Tensor{Name: t.Name, Kind: uint32(kind), Shape: shape, WriterTo: &tensorWriter{t: t, kind: kind}})
	}
	return out, nil
}

// OutputType is a tensor's type in the GGUF: the requested type for
// matrices; float32 for 1-D tensors (norms), biases and tensors marked F32;
// and, like llama.cpp's converter, F16 for a q8_0 matrix whose rows are not
// whole 32-value blocks.
func OutputType(t Tensor, want ggml.TensorType) ggml.TensorType {
	if t.F32 || len(t.Shape) < 2 || strings.HasSuffix(t.Name, ".bias") {
		return ggml.TensorTypeF32
	}
	if want == ggml.TensorTypeQ8_0 && t.Shape[len(t.Shape)-1]%q8Block != 0 {
		return ggml.TensorTypeF16
	}
	return want
}

// writeWhole writes out through write to a temporary file next to it
// (atomicfile), hashes what was written and renames it into place; on any
// error nothing is left. It returns the sha256.
func writeWhole(out string, write func(*os.File) error) (string, error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	f, err := atomicfile.Create(out)
	if err != nil {
		return "", err
	}
	defer f.Discard()
	if err := write(f.File); err != nil {
		return "", fmt.Errorf("write %s: %w", out, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", out, err)
	}
	if err := f.Commit(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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

// Tool names the converter: udgam-ci's own pipeline, with ollama's GGUF
// writer and tokenizer parser, whose version EngineVersion names.
func Tool() string {
	return "udgam-ci " + release.Version + " convert, " + ggufspec.EngineVersion()
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
