package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// An Architecture converts one family of Hugging Face model classes to the
// GGUF names, keys and tensor layout that llama.cpp's loader expects for
// its architecture. Each one lives in its own file (arch_<name>.go) and is
// listed in architectures; its test compares llama.cpp's log-probabilities
// on the converted file with a float64 forward pass written from the
// architecture's definition (reference/testmodel).
type Architecture struct {
	// Classes are the config.json "architectures" values it takes.
	Classes []string
	// GGUF is llama.cpp's architecture name (general.architecture).
	GGUF string
	// Kind is "transformer", "recurrent" or "hybrid": recurrent state
	// changes how sequences may be packed.
	Kind string
	// Convert returns the model's key-values (without the tokenizer's, and
	// without general.file_type) and its tensors. It must use every weight
	// it is given (Weights reports what was left unread) or say why not.
	Convert func(cfg Config, w Weights) (KV, []Tensor, error)
}

// archConfig is an architecture's config.json, read and checked: the
// shape converters take (read the config, then write keys, then tensors).
type archConfig interface {
	kv() KV
	tensors(w Weights) ([]Tensor, error)
}

// byShape makes an Architecture's Convert from its config reader.
func byShape[C archConfig](read func(Config, Weights) (C, error)) func(Config, Weights) (KV, []Tensor, error) {
	return func(cfg Config, w Weights) (KV, []Tensor, error) {
		c, err := read(cfg, w)
		if err != nil {
			return nil, nil, err
		}
		ts, err := c.tensors(w)
		if err != nil {
			return nil, nil, err
		}
		return c.kv(), ts, nil
	}
}

// KV is GGUF metadata: key to value (uint32, float32, bool, string or
// slices of those), as ollama's GGUF writer takes it.
type KV = map[string]any

// Tensor is one tensor of the GGUF being written.
type Tensor struct {
	Name  string   // GGUF name, such as blk.0.attn_q.weight
	Shape []uint64 // slowest dimension first, as in PyTorch
	// F32 keeps the tensor float32 whatever the output dtype: norms, biases,
	// and tensors llama.cpp's kernels only take as float32 (ssm_conv1d,
	// ssm_a, ssm_d, ...).
	F32  bool
	Read func() ([]float32, error) // values, row-major in Shape
}

// Weights gives a checkpoint's tensors by their Hugging Face names, whatever
// file format holds them.
type Weights interface {
	Names() []string            // sorted
	Shape(name string) []uint64 // nil when absent
	Read(name string) ([]float32, error)
}

// Config is a checkpoint's config.json, kept raw so that each architecture
// reads the fields it knows, and can refuse ones it does not.
type Config struct {
	Classes   []string
	ModelType string
	raw       map[string]json.RawMessage
}

// ParseConfig reads config.json.
func ParseConfig(b []byte) (Config, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(pythonNumbers(b), &raw); err != nil {
		return Config{}, fmt.Errorf("config.json: %w", err)
	}
	if err := untagFloats(raw); err != nil {
		return Config{}, err
	}
	c := Config{raw: raw}
	if err := c.Get("architectures", &c.Classes); err != nil {
		return Config{}, err
	}
	if err := c.Get("model_type", &c.ModelType); err != nil {
		return Config{}, err
	}
	return c, nil
}

// pythonNumbers turns the bare Infinity, -Infinity and NaN that Python's
// json module writes (transformers saves Mamba-2's and Falcon-H1's default
// time_step_limit as [0.0, Infinity]) into the strings "Infinity",
// "-Infinity" and "NaN", so that the file parses as JSON; reading such a
// key as a number is then an error naming it.
func pythonNumbers(b []byte) []byte {
	var out []byte
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		default:
			for _, word := range []string{"-Infinity", "Infinity", "NaN"} {
				if strings.HasPrefix(string(b[i:min(len(b), i+len(word))]), word) {
					if out == nil {
						out = append([]byte{}, b[:i]...)
					}
					out = append(out, '"')
					out = append(out, word...)
					c = '"'
					i += len(word) - 1
					break
				}
			}
		}
		if out != nil {
			out = append(out, c)
		}
	}
	if out == nil {
		return b
	}
	return out
}

// untagFloats reads the floats JSON cannot hold as transformers 5 writes
// them, {"__float__": "Infinity"} (its default time_step_limit of Mamba-2
// and Falcon-H1 is [0.0, {"__float__": "Infinity"}]), as the strings
// pythonNumbers gives older files' bare Infinity.
func untagFloats(raw map[string]json.RawMessage) error {
	for k, v := range raw {
		if !bytes.Contains(v, []byte(`"__float__"`)) {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber() // numbers keep their text: 0.0 stays 0.0
		var x any
		if err := d.Decode(&x); err != nil {
			return fmt.Errorf("config.json: %s: %w", k, err)
		}
		b, err := json.Marshal(untag(x))
		if err != nil {
			return fmt.Errorf("config.json: %s: %w", k, err)
		}
		raw[k] = b
	}
	return nil
}

func untag(x any) any {
	switch t := x.(type) {
	case map[string]any:
		if s, ok := t["__float__"].(string); ok && len(t) == 1 {
			return s
		}
		for k, v := range t {
			t[k] = untag(v)
		}
	case []any:
		for i, v := range t {
			t[i] = untag(v)
		}
	}
	return x
}

// Has reports whether config.json sets key to something other than null.
func (c Config) Has(key string) bool {
	v, ok := c.raw[key]
	return ok && string(v) != "null"
}

// Get decodes key into v, leaving v as it is when the key is absent or null.
func (c Config) Get(key string, v any) error {
	if !c.Has(key) {
		return nil
	}
	if err := json.Unmarshal(c.raw[key], v); err != nil {
		return fmt.Errorf("config.json: %s: %w", key, err)
	}
	return nil
}

// Keys lists config.json's keys, sorted.
func (c Config) Keys() []string {
	keys := make([]string, 0, len(c.raw))
	for k := range c.raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// architectures is every architecture the converter takes. Add new ones
// here, one line each.
var architectures = []*Architecture{
	Gemma3,
	Lfm2,
	Llama,
	Qwen2,
	Qwen3,
	FalconH1,
	Mamba2,
	Mamba,
	GPT2,
	GPTNeoX,
	Olmo,
	Olmo2,
}

// Lookup returns the architecture converting a config.json's class, or an
// error that lists what is supported.
func Lookup(cfg Config) (*Architecture, error) {
	if len(cfg.Classes) == 0 {
		return nil, fmt.Errorf("config.json names no architectures; supported: %s", strings.Join(SupportedClasses(), ", "))
	}
	for _, a := range architectures {
		if slices.Contains(a.Classes, cfg.Classes[0]) {
			return a, nil
		}
	}
	return nil, fmt.Errorf("architecture %s is not supported by the converter; supported: %s", cfg.Classes[0], strings.Join(SupportedClasses(), ", "))
}

// SupportedClasses lists every Hugging Face class the converter takes, sorted.
func SupportedClasses() []string {
	var out []string
	for _, a := range architectures {
		out = append(out, a.Classes...)
	}
	sort.Strings(out)
	return out
}
