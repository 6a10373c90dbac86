package runner

import (
	"fmt"
	"slices"

	"github.com/ollama/ollama/fs/ggml"
)

// archChecks turn GGUF files on which llama.cpp would assert, and abort
// the process, into errors before the file reaches C. Each entry is one
// architecture the converter writes; each check names the case it stops.
// (A missing tensor or a wrong shape needs none: llama.cpp's loader
// reports those as errors.)
var archChecks = map[string]func(kv ggml.KV) error{
	"gemma3":    checkGemma3,
	"lfm2":      checkLfm2,
	"mamba":     checkSSM,
	"mamba2":    checkSSM,
	"falcon-h1": checkSSM,
}

// checkLoadable runs the check of the file's architecture, if it has one.
func checkLoadable(kv ggml.KV) error {
	if check, ok := archChecks[kv.Architecture()]; ok {
		return check(kv)
	}
	return nil
}

// Gemma3SWAPattern is llama.cpp's fixed gemma3 layer pattern: with a
// sliding window, layer i attends globally when i%6 == 5.
const Gemma3SWAPattern = 6

// checkGemma3 stops a sliding-window gemma3 with no global-attention
// layer: llama.cpp's global cache then holds no layer, and its first
// decode asserts (GGML_ASSERT(buffer) in ggml-backend.cpp).
func checkGemma3(kv ggml.KV) error {
	layers := kv.Uint("block_count")
	if kv.Uint("attention.sliding_window") > 0 && layers < Gemma3SWAPattern {
		return fmt.Errorf("gemma3 with %d layers and a sliding window has no global-attention layer (llama.cpp makes layer %d the first); llama.cpp cannot run it", layers, Gemma3SWAPattern-1)
	}
	return nil
}

// checkLfm2 stops an lfm2 whose layers are all attention or all
// convolution (llama.cpp's hybrid memory then has an empty part, and
// asserts on the first decode) and a convolution kernel shorter than 2
// (asserted when the graph is built).
func checkLfm2(kv ggml.KV) error {
	if l := kv.Uint("shortconv.l_cache"); l < 2 {
		return fmt.Errorf("lfm2 with shortconv.l_cache = %d: llama.cpp needs a convolution kernel of at least 2", l)
	}
	heads := uintOrArray(kv, "attention.head_count_kv")
	if len(heads) == 1 {
		heads = slices.Repeat(heads, int(kv.Uint("block_count")))
	}
	attn := slices.ContainsFunc(heads, func(n uint32) bool { return n > 0 })
	conv := slices.Contains(heads, 0)
	if !attn || !conv {
		return fmt.Errorf("lfm2 whose layers are all %s: llama.cpp needs both attention and convolution layers (attention.head_count_kv %v)",
			map[bool]string{true: "attention", false: "convolution"}[attn], heads)
	}
	return nil
}

// uintOrArray reads a per-layer value stored as one number or an array,
// whether decoded from a file or built in Go ([]uint32).
func uintOrArray(kv ggml.KV, key string) []uint32 {
	if v, ok := kv[kv.Architecture()+"."+key].([]uint32); ok {
		return v
	}
	return kv.UintOrArrayValueAsArray(key, 0)
}

// checkSSM stops the state-space sizes llama.cpp asserts on: mamba2 with an
// inner size other than twice the embedding length (GGML_ASSERT in its
// loader), SSM groups that do not divide the heads (GGML_ASSERT in ggml's
// ssm_scan at the first decode), and a convolution kernel under 2, whose
// convolution state would hold no cell.
func checkSSM(kv ggml.KV) error {
	arch := kv.Architecture()
	inner, embd := kv.Uint("ssm.inner_size"), kv.Uint("embedding_length")
	if k := kv.Uint("ssm.conv_kernel"); k < 2 {
		return fmt.Errorf("%s with ssm.conv_kernel = %d: llama.cpp needs a convolution kernel of at least 2", arch, k)
	}
	if arch == "mamba2" && inner != 2*embd {
		return fmt.Errorf("mamba2 with ssm.inner_size %d and embedding_length %d: llama.cpp takes only an inner size of twice the embedding length", inner, embd)
	}
	if arch != "mamba" {
		heads, groups := kv.Uint("ssm.time_step_rank"), kv.Uint("ssm.group_count")
		if groups == 0 || heads%groups != 0 {
			return fmt.Errorf("%s with %d SSM heads in %d groups: llama.cpp needs the groups to divide the heads", arch, heads, groups)
		}
	}
	return nil
}
