package hftok

import (
	"encoding/json"
	"fmt"
)

// ParsePrep builds a Tokenizer that only prepares text, from a
// tokenizer.json's normalizer and added_tokens as udgam-ci's converter
// records them in a GGUF (ggufspec/tokspec): Segments, SplitAdded, Normalize
// and SplitNormalized work as with Parse, Encode refuses (there is no
// model). The added tokens' ids are taken as given: the converter checked
// them against the vocabulary.
func ParsePrep(normalizer, addedTokens json.RawMessage) (*Tokenizer, error) {
	var tokens []addedToken
	if !isNull(addedTokens) {
		if err := json.Unmarshal(addedTokens, &tokens); err != nil {
			return nil, fmt.Errorf("added_tokens: %w", err)
		}
	}
	t := &Tokenizer{}
	var err error
	if t.norm, err = parseNormalizer(normalizer); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	if t.added, err = newAddedVocab(tokens, nil, t.norm); err != nil {
		return nil, fmt.Errorf("added_tokens: %w", err)
	}
	return t, nil
}
