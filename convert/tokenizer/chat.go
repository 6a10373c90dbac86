package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/udgamlabs/udgam-ci/ggufspec"
)

// ChatTemplateKey is the GGUF key of the tokenizer's chat template, as
// llama.cpp's own converter writes it. udgam-ci never applies it (both
// tests score raw text); it is carried so that a run can record its hash
// and a changed template shows between revisions.
const ChatTemplateKey = ggufspec.ChatTemplateKey

// chatTemplate writes the tokenizer's chat template when it has one:
// chat_template.jinja (newer transformers save it there), else
// tokenizer_config.json's chat_template, a string or a list of named
// templates of which "default" is the one written.
func (c *conv) chatTemplate(tc *tokenizerConfig) error {
	b, err := fs.ReadFile(c.fsys, "chat_template.jinja")
	switch {
	case err == nil:
		c.kv[ChatTemplateKey] = string(b)
		c.logf("chat template: from chat_template.jinja (%d bytes; recorded, never applied)", len(b))
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	raw, ok := tc.raw["chat_template"]
	if !ok || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var named []struct {
			Name     string `json:"name"`
			Template string `json:"template"`
		}
		if err := json.Unmarshal(raw, &named); err != nil {
			return fmt.Errorf("tokenizer_config.json: chat_template is neither a string nor a list of named templates")
		}
		for _, n := range named {
			if n.Name == "default" {
				s = n.Template
			}
		}
		if s == "" {
			return nil
		}
	}
	c.kv[ChatTemplateKey] = s
	c.logf("chat template: from tokenizer_config.json (%d bytes; recorded, never applied)", len(s))
	return nil
}

// bosMismatch reports a tokenizer_config.json add_bos_token that the
// tokenizer.json post-processor contradicts. The post-processor decides
// (it is what transformers runs), so scoring puts BOS first as it does;
// when it adds BOS against the config, the model may not have been
// trained with one, and a user who also adds BOS by hand gets two: a
// warning, not a note.
func (c *conv) bosMismatch(config, adds bool, how string) {
	if adds && !config {
		msg := fmt.Sprintf("the tokenizer adds BOS (%s) where tokenizer_config.json says add_bos_token false; scoring follows the tokenizer and puts BOS first (--add-bos no scores without it)", how)
		c.warnings = append(c.warnings, msg)
		c.logf("WARNING: %s", msg)
		return
	}
	c.logf("note: tokenizer_config.json add_bos_token is %v, but %s; the tokenizer.json post-processor decides", config, how)
}
