// Package tokspec is the record of how a converted GGUF's text must be
// prepared before llama.cpp tokenizes it, so that the ids equal those of the
// checkpoint's Hugging Face tokenizer. The converter (convert/tokenizer)
// writes it into the GGUF; the scoring side reads it back and applies it
// (normalizer steps and added-token matching that llama.cpp does not do the
// way Hugging Face does).
package tokspec

import (
	"encoding/json"
	"fmt"
)

// Key is the GGUF metadata key that holds a Spec as JSON.
const Key = "general.udgam_ci.tokenizer"

// Spec describes a converted tokenizer. Every field is part of the
// tokenizer's identity: Hash covers them.
type Spec struct {
	// Source names the files the vocabulary came from: "tokenizer.json",
	// "tokenizer.model", or "vocab.json+merges.txt".
	Source string `json:"source"`
	// Model is the Hugging Face model type (BPE, Unigram, ...) and GGUF the
	// tokenizer.ggml.model written (gpt2, llama, ...).
	Model string `json:"model"`
	GGUF  string `json:"gguf"`
	// Pre is the llama.cpp pre-tokenizer type written (tokenizer.ggml.pre).
	Pre string `json:"pre,omitempty"`
	// Normalizer holds the tokenizer.json normalizer steps that llama.cpp
	// does not apply itself, in tokenizer.json's own JSON form; they are
	// applied in Go to text between added tokens. Null when none.
	Normalizer json.RawMessage `json:"normalizer,omitempty"`
	// AddedTokens is tokenizer.json's added_tokens array, matched in Go in
	// the text as Hugging Face's tokenizer matches them (even with
	// add_special_tokens=false).
	AddedTokens json.RawMessage `json:"added_tokens,omitempty"`
	// SpacePrefixFirst is a Metaspace pre-tokenizer with prepend_scheme
	// "first": a space (which llama.cpp turns into "▁") goes before the
	// text's first segment, when that segment starts the text and does not
	// start with a space or "▁"; llama.cpp's add_space_prefix, which puts
	// one before every text, is off.
	SpacePrefixFirst bool `json:"space_prefix_first,omitempty"`
	// MissingBytes are the bytes a byte-level vocabulary has no token for
	// (SmolLM2's lacks 21). Hugging Face's BPE, without an unk_token, drops
	// such a byte after pre-tokenization, which llama.cpp cannot reproduce
	// (it aborts), so text holding one is refused before scoring.
	MissingBytes []int `json:"missing_bytes,omitempty"`
	// AddBOS says whether the Hugging Face tokenizer itself adds BOS when
	// asked for special tokens (its post-processor or add_bos_token).
	AddBOS bool `json:"add_bos"`
	// Unverified is empty when the conversion is known to reproduce the
	// Hugging Face tokenizer; otherwise it says what was not established
	// (the user passed --allow-unverified-tokenizer). Runs record it.
	Unverified string `json:"unverified,omitempty"`
}

// Encode returns the Spec as the JSON string stored under Key.
func (s Spec) Encode() (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("encode tokenizer spec: %w", err)
	}
	return string(b), nil
}

// Decode reads a Spec from the string stored under Key.
func Decode(v string) (Spec, error) {
	var s Spec
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return Spec{}, fmt.Errorf("decode %s: %w", Key, err)
	}
	return s, nil
}
