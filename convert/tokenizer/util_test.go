package tokenizer_test

import (
	"encoding/json"
	"testing"

	"github.com/udgamlabs/udgam-ci/ggufspec/tokspec"
)

type added struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

func decodeAdded(t *testing.T, s tokspec.Spec) []added {
	t.Helper()
	var out []added
	if len(s.AddedTokens) == 0 {
		return nil
	}
	if err := json.Unmarshal(s.AddedTokens, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
