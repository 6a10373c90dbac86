package convert

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"strings"
	"testing/fstest"

	"github.com/ollama/ollama/convert"
)

// tokenizerResult is what the tokenizer step gives the GGUF: its
// tokenizer.* key-values, and a note for the conversion record.
type tokenizerResult struct {
	KV   KV
	Note string
}

// convertTokenizer is the pipeline's one tokenizer step. For now it is
// ollama's tokenizer parser (which pads the vocabulary to vocabSize) and
// the pre-tokenizer correction below; runner/convert/tokenizer replaces it.
func convertTokenizer(fsys fs.FS, vocabSize int) (tokenizerResult, error) {
	if _, err := fs.Stat(fsys, "tokenizer.json"); err != nil {
		return tokenizerResult{}, fmt.Errorf("checkpoint has no tokenizer.json: %w", err)
	}
	// ollama parses tokenizers only through an architecture it knows; any
	// one does, since the tokenizer files are read the same way.
	cfg, err := json.Marshal(map[string]any{"architectures": []string{"LlamaForCausalLM"}, "vocab_size": vocabSize})
	if err != nil {
		return tokenizerResult{}, err
	}
	_, tok, err := convert.LoadModelMetadata(overlayFS{fsys, fstest.MapFS{"config.json": {Data: cfg}}})
	if err != nil {
		return tokenizerResult{}, fmt.Errorf("read tokenizer: %w", err)
	}
	pre, err := preTokenizer(fsys, tok.Pre)
	if err != nil {
		return tokenizerResult{}, err
	}
	tok.Pre = pre
	kv := KV{}
	for k, v := range maps.All(convert.ModelParameters{}.KV(tok)) {
		if strings.HasPrefix(k, "tokenizer.") {
			kv[k] = v
		}
	}
	return tokenizerResult{KV: kv, Note: "pre=" + pre}, nil
}

// overlayFS serves the files of over in place of those of fsys.
type overlayFS struct {
	fs.FS
	over fstest.MapFS
}

func (o overlayFS) Open(name string) (fs.File, error) {
	if _, ok := o.over[name]; ok {
		return o.over.Open(name)
	}
	return o.FS.Open(name)
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
