package runner

import (
	"crypto/sha256"
	"encoding/hex"
)

// ChatTemplateSHA256 is the hex SHA-256 of a chat template's text, "" for
// none: a template edited between revisions shows as a changed hash.
func ChatTemplateSHA256(template string) string {
	if template == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(template))
	return hex.EncodeToString(sum[:])
}

// TokenText is the text of token id, "" when id is not in the vocabulary.
func TokenText(tokens []string, id int32) string {
	if id < 0 || int(id) >= len(tokens) {
		return ""
	}
	return tokens[id]
}
