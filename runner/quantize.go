package runner

import (
	"fmt"
	"slices"
	"strings"
)

// QuantTypes are the quantizations udgam-ci makes itself from a reference
// GGUF with llama.cpp's own quantizer (llama_model_quantize), by the names
// llama.cpp's quantize tool gives them, largest first.
var QuantTypes = []string{"q8_0", "q6_K", "q5_K_M", "q4_1", "q4_K_M", "q4_0"}

// QuantType returns the canonical spelling of a quantization type (case is
// ignored: "Q4_K_M" is "q4_K_M"), or an error that lists the known ones.
func QuantType(name string) (string, error) {
	for _, t := range QuantTypes {
		if strings.EqualFold(t, name) {
			return t, nil
		}
	}
	return "", fmt.Errorf("quantization type %q: want one of %s", name, strings.Join(QuantTypes, ", "))
}

// IsQuantType reports whether name names one of QuantTypes.
func IsQuantType(name string) bool {
	return slices.ContainsFunc(QuantTypes, func(t string) bool { return strings.EqualFold(t, name) })
}
