package runner

import (
	"fmt"
	"strings"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/udgamlabs/udgam-ci/ggufspec"
)

// archChecks are the checks particular to one architecture, each naming
// the assertion it stops; checkLoadable runs them after its own.
var archChecks = map[string]func(kv ggml.KV) error{
	"lfm2":      checkLfm2,
	"mamba":     checkSSM,
	"mamba2":    checkSSM,
	"falcon-h1": checkSSM,
}

// checkLoadable stops GGUF files on which llama.cpp would assert, and
// abort the process, instead of returning an error; ReadInfo runs it so
// nothing reaches C. (A missing tensor or a wrong shape needs no check
// here: llama.cpp's loader reports those as errors.)
//
// llama.cpp builds the inputs of both halves of a composite memory for
// every graph, and fills them before each decode; a half that holds no
// layer leaves its inputs without a buffer, and the first decode asserts
// (GGML_ASSERT(buffer) in ggml-backend.cpp). So sliding-window layers need
// a global layer beside them (the Gemma 3 abort: fewer than six layers),
// and a hybrid needs both attention and recurrent layers.
func checkLoadable(kv ggml.KV) error {
	l := ggufspec.LayoutFromKV(kv)
	var global, sliding, state int
	for _, layer := range l.Layers {
		switch {
		case layer == "attention":
			global++
		case strings.HasPrefix(layer, "sliding window"):
			sliding++
		case layer == "attention+ssm":
			global++
			state++
		default:
			state++
		}
	}
	arch := kv.Architecture()
	switch {
	case sliding > 0 && global == 0:
		return fmt.Errorf("%s with %d layers, all sliding-window (llama.cpp makes every %dth layer global): llama.cpp cannot run a model without a global-attention layer", arch, len(l.Layers), ggufspec.SWAPeriod(arch))
	case l.Family == "hybrid" && global == 0 && state > 0:
		return fmt.Errorf("%s whose layers are all %s: llama.cpp cannot run a hybrid model without attention layers", arch, l.Layers[0])
	case l.Family == "hybrid" && state == 0 && global > 0:
		return fmt.Errorf("%s whose layers are all attention: llama.cpp cannot run a hybrid model without recurrent layers", arch)
	}
	if check, ok := archChecks[arch]; ok {
		return check(kv)
	}
	return nil
}

// checkLfm2 stops a short convolution of fewer than 2 taps, asserted when
// llama.cpp builds the graph.
func checkLfm2(kv ggml.KV) error {
	if l := kv.Uint("shortconv.l_cache"); l < 2 {
		return fmt.Errorf("lfm2 with shortconv.l_cache = %d: llama.cpp needs a convolution kernel of at least 2", l)
	}
	return nil
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
