package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// result writes what was decided: every tokenizer.ggml.* key, and the Spec
// the scoring side applies.
func (c *conv) result() (*Result, error) {
	kv := map[string]any{
		"tokenizer.ggml.model":         c.spec.GGUF,
		"tokenizer.ggml.pre":           c.spec.Pre,
		"tokenizer.ggml.tokens":        c.tokens,
		"tokenizer.ggml.token_type":    c.types,
		"tokenizer.ggml.add_bos_token": c.spec.AddBOS,
		"tokenizer.ggml.add_eos_token": false,
	}
	if c.scores != nil {
		kv["tokenizer.ggml.scores"] = c.scores
	}
	if c.merges != nil {
		kv["tokenizer.ggml.merges"] = c.merges
	}
	// llama.cpp's SentencePiece tokenizer reads whether a space goes first.
	if c.spec.GGUF == "llama" {
		kv["tokenizer.ggml.add_space_prefix"] = c.spacePrefix
	}
	for key, id := range map[string]int{"bos": c.bos, "eos": c.eos, "unknown": c.unk} {
		if id >= 0 {
			kv["tokenizer.ggml."+key+"_token_id"] = uint32(id)
		}
	}
	if c.chatTemplate.from != "" {
		kv[ChatTemplateKey] = c.chatTemplate.text
	}
	spec := c.spec
	if len(c.added) > 0 {
		b, err := json.Marshal(c.added)
		if err != nil {
			return nil, fmt.Errorf("encode added tokens: %w", err)
		}
		spec.AddedTokens = b
	}
	spec.Unverified = strings.Join(c.unverified, "; ")
	return &Result{KV: kv, Spec: spec, Report: c.report, BOS: c.bos, EOS: c.eos, Warnings: c.warnings}, nil
}
