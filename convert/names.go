package convert

import (
	"fmt"
	"regexp"
	"strings"
)

// tensorNames are an architecture's renames from its checkpoint's tensor
// names to the names llama.cpp loads, declared once per architecture
// (ollama lists its replacements per model the same way) instead of
// written out at each tensor of each layer. A layer's tensor holds N for
// the layer's number on both sides:
// "model.layers.N.self_attn.q_proj.weight" is "blk.N.attn_q.weight".
type tensorNames map[string]string

// layerNumber is a layer's number inside a checkpoint tensor's name.
var layerNumber = regexp.MustCompile(`\.(\d+)\.`)

// gguf is llama.cpp's name for the checkpoint's tensor hf; a name the
// table lacks is an error naming it (a converter asking for a tensor its
// architecture does not declare).
func (n tensorNames) gguf(hf string) (string, error) {
	key, layer := hf, ""
	if m := layerNumber.FindStringSubmatchIndex(hf); m != nil {
		key, layer = hf[:m[2]]+"N"+hf[m[3]:], hf[m[2]:m[3]]
	}
	name, ok := n[key]
	if !ok {
		return "", fmt.Errorf("tensor %s: the architecture's table has no llama.cpp name for %s", hf, key)
	}
	if layer == "" {
		return name, nil
	}
	return strings.Replace(name, ".N.", "."+layer+".", 1), nil
}

// Named takes the checkpoint's tensor hf under the name t.Names gives it.
func (t *Taker) Named(hf string, shape ...uint64) Tensor {
	name, err := t.Names.gguf(hf)
	if err != nil {
		if t.err == nil {
			t.err = err
		}
		return Tensor{}
	}
	return t.Take(hf, name, shape...)
}

// Zeros is n float32 zeros under the name t.Names gives hf: a tensor the
// checkpoint lacks and llama.cpp's graph uses anyway (a convolution
// bias).
func (t *Taker) Zeros(hf string, n uint64) Tensor {
	name, err := t.Names.gguf(hf)
	if err != nil && t.err == nil {
		t.err = err
	}
	return zeros(name, n)
}

// under is n with prefix before every checkpoint name.
func (n tensorNames) under(prefix string) tensorNames {
	out := make(tensorNames, len(n))
	for hf, gguf := range n {
		out[prefix+hf] = gguf
	}
	return out
}

// merge is the tables together (an architecture and its mixer's).
func merge(tables ...tensorNames) tensorNames {
	out := tensorNames{}
	for _, t := range tables {
		for k, v := range t {
			out[k] = v
		}
	}
	return out
}
