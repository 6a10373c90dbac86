package ggufspec

import (
	"fmt"
	"strings"

	"github.com/ollama/ollama/fs/ggml"
)

// Layout is how a GGUF model's layers compute, read from its metadata as
// llama.cpp reads it: the family (recurrent state changes how sequences may
// be packed) and what each layer does.
type Layout struct {
	// Family is "transformer", "recurrent" (every layer carries state:
	// Mamba, RWKV) or "hybrid" (some or all layers carry state next to
	// attention), as llama.cpp classes the architecture.
	Family string `json:"family"`
	// Layers names each layer: "attention", "sliding window N" (attention
	// over the last N positions), "ssm", "rwkv", "shortconv" or
	// "attention+ssm" (both in parallel, Falcon-H1).
	Layers []string `json:"layers"`
}

// llama.cpp's llm_arch_is_recurrent and llm_arch_is_hybrid lists, by GGUF
// architecture name.
var (
	recurrentArchs = map[string]string{"mamba": "ssm", "mamba2": "ssm", "rwkv6": "rwkv", "rwkv6qwen2": "rwkv", "rwkv7": "rwkv", "arwkv7": "rwkv"}
	hybridArchs    = map[string]string{"jamba": "ssm", "falcon-h1": "attention+ssm", "plamo2": "ssm", "granitehybrid": "ssm", "lfm2": "shortconv", "lfm2moe": "shortconv", "nemotron_h": "ssm", "nemotron_h_moe": "ssm", "qwen3next": "ssm"}
	// swaPattern is, for architectures whose sliding-window layers
	// llama.cpp places by a fixed period, that period: in each run of n
	// layers the last attends to everything, the others slide.
	swaPattern = map[string]int{"gemma2": 2, "gemma3": Gemma3SWAPattern, "gemma3n": 5, "cohere2": 4, "exaone4": 4, "gpt-oss": 2}
)

// Gemma3SWAPattern is llama.cpp's fixed gemma3 period: with a sliding
// window, layer i attends globally when i%6 == 5, whatever the GGUF says.
const Gemma3SWAPattern = 6

// SWAPeriod is the fixed period of arch's sliding-window layers (0 when
// llama.cpp places them otherwise or the architecture has none).
func SWAPeriod(arch string) int { return swaPattern[arch] }

// LayoutFromKV reads the layout of a model from its GGUF metadata.
func LayoutFromKV(kv ggml.KV) Layout {
	arch := kv.Architecture()
	n := int(kv.Uint("block_count"))
	l := Layout{Family: "transformer", Layers: make([]string, n)}
	// A per-layer KV head count of 0 marks a layer without attention
	// (LFM2, Jamba, Nemotron-H write one count per layer).
	perLayer := kv.Uints("attention.head_count_kv")
	if built, ok := kv[arch+".attention.head_count_kv"].([]uint32); ok {
		perLayer = built // a KV built in Go, not decoded from a file
	}
	if perLayer == nil {
		for _, v := range kv.Ints("attention.head_count_kv") {
			perLayer = append(perLayer, uint32(max(v, 0)))
		}
	}
	if other, ok := recurrentArchs[arch]; ok {
		l.Family = "recurrent"
		for i := range l.Layers {
			l.Layers[i] = other
		}
		return l
	}
	if other, ok := hybridArchs[arch]; ok {
		l.Family = "hybrid"
		for i := range l.Layers {
			l.Layers[i] = other
			if other != "attention+ssm" && len(perLayer) == n && perLayer[i] > 0 {
				l.Layers[i] = "attention"
			}
		}
		return l
	}
	swa := kv.Uint("attention.sliding_window")
	period := swaPattern[arch]
	for i := range l.Layers {
		l.Layers[i] = "attention"
		if swa > 0 && period > 0 && i%period < period-1 {
			l.Layers[i] = fmt.Sprintf("sliding window %d", swa)
		}
	}
	return l
}

// String writes the layers in runs: "30 x attention", or
// "5 x sliding window 512, attention, 5 x sliding window 512, attention".
func (l Layout) String() string {
	var parts []string
	for i := 0; i < len(l.Layers); {
		j := i
		for j < len(l.Layers) && l.Layers[j] == l.Layers[i] {
			j++
		}
		if j-i == 1 {
			parts = append(parts, l.Layers[i])
		} else {
			parts = append(parts, fmt.Sprintf("%d x %s", j-i, l.Layers[i]))
		}
		i = j
	}
	return strings.Join(parts, ", ")
}
