// Package tokjson reads a Hugging Face tokenizer.json: its top level, its
// added tokens and its model's fields, once, for every package that reads
// the file. The converter (convert/tokenizer) decides from them what
// llama.cpp can reproduce, the text preparation (runner/textprep/hfprep)
// matches the added tokens the converter records, and the Go check
// (runner/hftok) encodes with them. The pipeline components (normalizer,
// pre-tokenizer, post-processor, decoder) stay raw JSON: each reader
// parses the ones it handles and refuses the rest by name.
package tokjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// File is a tokenizer.json.
type File struct {
	Truncation    json.RawMessage `json:"truncation"`
	Padding       json.RawMessage `json:"padding"`
	AddedTokens   []AddedToken    `json:"-"` // read by Parse, each with its id
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         Model           `json:"model"`
}

// AddedToken is one entry of tokenizer.json's added_tokens (and of
// tokenizer_config.json's added_tokens_decoder, keyed there by id). Hugging
// Face's tokenizers requires every flag; a flag a file leaves out reads as
// false here. Its JSON form is the one tokspec.Spec.AddedTokens keeps.
type AddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// Model is tokenizer.json's model: the fields of the BPE and Unigram
// models, and the whole object (Raw) for what a model type adds.
type Model struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	UnkID                   *int32          `json:"unk_id"`
	ByteFallback            bool            `json:"byte_fallback"`
	FuseUnk                 bool            `json:"fuse_unk"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	Dropout                 *float64        `json:"dropout"`
	// Raw is the model object as the file writes it; null or empty when
	// the file has no model.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON reads the fields and keeps the whole object in Raw.
func (m *Model) UnmarshalJSON(b []byte) error {
	type fields Model // without this method
	var f fields
	if !IsNull(b) {
		if err := json.Unmarshal(b, &f); err != nil {
			return err
		}
	}
	*m = Model(f)
	m.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// ParseModel reads a model object on its own (a model type's own parser
// starts from it).
func ParseModel(raw json.RawMessage) (Model, error) {
	var m Model
	if err := m.UnmarshalJSON(raw); err != nil {
		return Model{}, err
	}
	return m, nil
}

// Parse reads the contents of a tokenizer.json.
func Parse(b []byte) (*File, error) {
	var f struct {
		File
		AddedTokens json.RawMessage `json:"added_tokens"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	added, err := ParseAddedTokens(f.AddedTokens)
	if err != nil {
		return nil, fmt.Errorf("added_tokens: %w", err)
	}
	f.File.AddedTokens = added
	return &f.File, nil
}

// ParseAddedTokens reads an added_tokens array: tokenizer.json's, or the
// copy a tokspec.Spec keeps. Every entry must carry its id.
func ParseAddedTokens(raw json.RawMessage) ([]AddedToken, error) {
	if IsNull(raw) {
		return nil, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, err
	}
	out := make([]AddedToken, len(entries))
	for i, e := range entries {
		var id struct {
			ID *int `json:"id"`
		}
		if err := json.Unmarshal(e, &out[i]); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		if err := json.Unmarshal(e, &id); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		if id.ID == nil {
			return nil, fmt.Errorf("added token %q has no id", out[i].Content)
		}
	}
	return out, nil
}

// ParseMerges reads a BPE model's merges, written either as "a b" strings
// or as [a, b] pairs; as in tokenizers, each has exactly two parts.
func ParseMerges(raw json.RawMessage) ([][2]string, error) {
	if IsNull(raw) {
		return nil, nil
	}
	var ss []string
	if err := json.Unmarshal(raw, &ss); err == nil {
		out := make([][2]string, len(ss))
		for i, s := range ss {
			a, b, ok := strings.Cut(s, " ")
			if !ok || a == "" || b == "" || strings.Contains(b, " ") {
				return nil, fmt.Errorf("merge %d %q is not two pieces separated by a space", i, s)
			}
			out[i] = [2]string{a, b}
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("model.merges: want strings or pairs: %w", err)
	}
	out := make([][2]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 || p[0] == "" || p[1] == "" {
			return nil, fmt.Errorf("merge %d %q is not a pair", i, p)
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

// IsNull reports whether a component is absent or null.
func IsNull(m json.RawMessage) bool {
	return len(m) == 0 || bytes.Equal(bytes.TrimSpace(m), []byte("null"))
}

// TypeOf reads the "type" field of a component.
func TypeOf(m json.RawMessage) (string, error) {
	var h struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(m, &h); err != nil {
		return "", err
	}
	if h.Type == "" {
		return "", fmt.Errorf("no type in %.80s", m)
	}
	return h.Type, nil
}

// ParseSequence parses the list under key of a Sequence component with
// parse, naming the entry that fails and leaving out null ones.
func ParseSequence[T comparable](m json.RawMessage, key string, parse func(json.RawMessage) (T, error)) ([]T, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(m, &fields); err != nil {
		return nil, fmt.Errorf("Sequence: %w", err)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(fields[key], &list); err != nil {
		return nil, fmt.Errorf("Sequence %s: %w", key, err)
	}
	var seq []T
	var none T
	for i, e := range list {
		c, err := parse(e)
		if err != nil {
			return nil, fmt.Errorf("Sequence[%d]: %w", i, err)
		}
		if c != none {
			seq = append(seq, c)
		}
	}
	return seq, nil
}
