package runner

import (
	"fmt"
	"strings"

	"github.com/ollama/ollama/fs/ggml"
)

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
	l := LayoutFromKV(kv)
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
		return fmt.Errorf("%s with %d layers, all sliding-window (llama.cpp makes every %dth layer global): llama.cpp cannot run a model without a global-attention layer", arch, len(l.Layers), swaPattern[arch])
	case l.Family == "hybrid" && global == 0:
		return fmt.Errorf("%s whose layers are all %s: llama.cpp cannot run a hybrid model without attention layers", arch, l.Layers[0])
	case l.Family == "hybrid" && state == 0:
		return fmt.Errorf("%s whose layers are all attention: llama.cpp cannot run a hybrid model without recurrent layers", arch)
	case arch == "lfm2" && kv.Uint("shortconv.l_cache") < 2:
		// Asserted when the graph is built.
		return fmt.Errorf("lfm2 with shortconv.l_cache = %d: llama.cpp needs a convolution kernel of at least 2", kv.Uint("shortconv.l_cache"))
	}
	return nil
}
