package tokcheck

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

//go:embed hf_tokenizers.py
var hfTokenizersPy string

// Python is a Python interpreter with Hugging Face's tokenizers (the Rust
// library) importable: the reference itself, for a user who has it.
// Nothing else in udgam-ci runs Python.
type Python struct {
	Path string // the interpreter, "python3" when empty
}

// Encode tokenizes every text with the tokenizer.json at path, without
// added special tokens, in one Python process. It returns the tokenizers
// version and one id list per text.
func (p Python) Encode(ctx context.Context, path string, texts []string) (version string, ids [][]int32, err error) {
	py := p.Path
	if py == "" {
		py = "python3"
	}
	if _, err := exec.LookPath(py); err != nil {
		return "", nil, fmt.Errorf("reference python: %s not found (install Python 3 and `pip install tokenizers`, or give --python PATH): %w", py, err)
	}
	in, err := json.Marshal(texts)
	if err != nil {
		return "", nil, err
	}
	cmd := exec.CommandContext(ctx, py, "-c", hfTokenizersPy, path)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 3 {
			return "", nil, fmt.Errorf("reference python: %s %s", py, msg)
		}
		return "", nil, fmt.Errorf("reference python: tokenizers on %s: %w\n%s", path, err, msg)
	}
	var res struct {
		Version string    `json:"version"`
		IDs     [][]int32 `json:"ids"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return "", nil, fmt.Errorf("reference python: read the ids of %s: %w", path, err)
	}
	if len(res.IDs) != len(texts) {
		return "", nil, fmt.Errorf("reference python: %d id lists for %d texts (%s)", len(res.IDs), len(texts), path)
	}
	return res.Version, res.IDs, nil
}

// Fixed is a Tokenizer that answers with ids computed beforehand for
// texts (ids[i] for texts[i]); any other text is an error.
func Fixed(texts []string, ids [][]int32) Tokenizer {
	byText := make(map[string][]int32, len(texts))
	for i, t := range texts {
		byText[t] = ids[i]
	}
	return func(text string) ([]int32, error) {
		got, ok := byText[text]
		if !ok {
			return nil, fmt.Errorf("no reference ids for %q", clip(text))
		}
		return got, nil
	}
}
