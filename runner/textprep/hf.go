package textprep

import (
	"encoding/json"
	"errors"
)

// hfPrep builds Hugging Face's pre-steps from a tokenizer record's
// normalizer and added tokens.
func hfPrep(normalizer, addedTokens json.RawMessage) (Prep, error) {
	return nil, errors.New("this GGUF's text preparation needs runner/hftok, which this build does not have yet")
}
