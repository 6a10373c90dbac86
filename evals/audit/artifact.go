package audit

import (
	"fmt"
	"strings"

	"github.com/udgamlabs/udgam-ci/hub"
	"github.com/udgamlabs/udgam-ci/runner"
)

// Artifact says where the artifact to audit comes from: the Action's
// `artifact:` input and the command line's --artifact or --quantize.
type Artifact struct {
	// Quantize is a runner.QuantTypes name: udgam-ci makes the artifact
	// from the reference with llama.cpp's quantizer.
	Quantize string
	// Hub is an hf://OWNER/NAME@COMMIT/path.gguf reference to a GGUF file
	// of a hub repository at a pinned revision.
	Hub string
	// File is a local GGUF file.
	File string
}

// ParseArtifact reads an artifact input: a quantization type (q8_0, q6_K,
// q5_K_M, q4_1, q4_K_M, q4_0), an hf:// reference to a .gguf file at a commit,
// or a path to a .gguf file.
func ParseArtifact(s string) (Artifact, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return Artifact{}, fmt.Errorf("artifact: empty; want a quantization type (%s), hf://OWNER/NAME@COMMIT/FILE.gguf or a .gguf path",
			strings.Join(runner.QuantTypes, ", "))
	case runner.IsQuantType(s):
		t, _ := runner.QuantType(s)
		return Artifact{Quantize: t}, nil
	case hub.IsRef(s):
		r, err := hub.ParseRef(s)
		if err != nil {
			return Artifact{}, fmt.Errorf("artifact: %w", err)
		}
		if !strings.HasSuffix(strings.ToLower(r.Path), ".gguf") {
			return Artifact{}, fmt.Errorf("artifact %q: name the .gguf file in the repository (hf://OWNER/NAME@COMMIT/FILE.gguf)", s)
		}
		return Artifact{Hub: s}, nil
	case strings.HasSuffix(strings.ToLower(s), ".gguf"):
		return Artifact{File: s}, nil
	}
	return Artifact{}, fmt.Errorf("artifact %q: not a quantization type (%s), an hf:// reference or a .gguf file",
		s, strings.Join(runner.QuantTypes, ", "))
}
