// Package hfprep is Hugging Face's text preparation before pre-tokenization,
// in Go: the added tokens matched in the text and the tokenizer.json
// normalizer applied to the text between them. It is the production path:
// runner/textprep runs it on every text it scores, from the record the
// converter keeps in the GGUF (ggufspec/tokspec). runner/hftok, the Go
// tokenizer that `model check-tokenizer` compares llama.cpp with, builds on
// it; the independent check of both is Hugging Face's own tokenizers
// (runner/tokcheck's Python path, `make crosscheck-tokenizers`) and
// transformers.js (reference/hfref).
//
// Hugging Face's order for one text (tokenizers' Tokenizer::encode_single_sequence
// and AddedVocabulary::extract_and_normalize):
//
//  1. SplitAdded: on the raw text, match the added tokens whose normalized
//     flag is false (special or not: add_special_tokens=false does not stop
//     it), leftmost-longest, honouring single_word, lstrip and rstrip.
//  2. Normalize each remaining segment on its own (a Prepend normalizer, for
//     one, prepends to every segment, not once per text).
//  3. SplitNormalized: in each normalized segment, match the added tokens
//     whose normalized flag is true, against their normalized content.
//
// Segments runs steps 1-3 and returns what a tokenizer must still
// pre-tokenize and encode, beside the added tokens' ids.
//
// Implemented normalizers: NFC, NFD, NFKC, NFKD, Lowercase, StripAccents,
// Replace, Prepend, Strip, BertNormalizer, Sequence; others (Precompiled,
// Nmt, ByteLevel) are refused by name.
package hfprep

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/udgamlabs/udgam-ci/internal/tokjson"
)

// Prep is the preparation of one tokenizer: its normalizer and added
// tokens. It is safe for concurrent use.
type Prep struct {
	added *addedVocab
	norm  Normalizer // nil: none
}

// New builds the preparation from a parsed normalizer (nil for none) and
// the added tokens, whose ids it takes as given.
func New(norm Normalizer, tokens []tokjson.AddedToken) (*Prep, error) {
	added, err := newAddedVocab(tokens, norm)
	if err != nil {
		return nil, err
	}
	return &Prep{added: added, norm: norm}, nil
}

// Parse builds the preparation from a tokenizer.json's normalizer and
// added_tokens as the converter records them in a GGUF (tokspec.Spec). The
// added tokens' ids are taken as given: the converter checked them against
// the vocabulary.
func Parse(normalizer, addedTokens json.RawMessage) (*Prep, error) {
	tokens, err := tokjson.ParseAddedTokens(addedTokens)
	if err != nil {
		return nil, fmt.Errorf("added_tokens: %w", err)
	}
	norm, err := ParseNormalizer(normalizer)
	if err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	p, err := New(norm, tokens)
	if err != nil {
		return nil, fmt.Errorf("added_tokens: %w", err)
	}
	return p, nil
}

// Segments runs Hugging Face's steps before pre-tokenization on text
// (SplitAdded, Normalize, SplitNormalized; see the package comment): the
// non-added segments it returns are normalized, ready for the
// pre-tokenizer and model, and must not be normalized again. Empty
// segments are dropped, as Hugging Face drops them.
func (p *Prep) Segments(text string) ([]Segment, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("segments: text is not valid UTF-8")
	}
	return p.Split(text), nil
}

// Split is Segments for text known to be valid UTF-8.
func (p *Prep) Split(text string) []Segment {
	var out []Segment
	for _, s := range p.added.split(text, true, false) {
		if s.Added {
			out = append(out, s)
			continue
		}
		norm, first := s.Text, s.First
		if p.norm != nil {
			norm, first = p.norm.Normalize(s.Text, first)
		}
		out = append(out, p.added.split(norm, first, true)...)
	}
	return out
}

// SplitAdded is step 1 of Hugging Face's order (package comment): it splits
// raw text on the added tokens with normalized=false. Normalize each
// non-added segment, then pass it to SplitNormalized. Empty segments are
// dropped.
func (p *Prep) SplitAdded(text string) []Segment {
	return p.added.split(text, true, false)
}

// Normalize applies the normalizer to s (s unchanged when there is none).
// Apply it to each non-added segment from SplitAdded, never to the whole
// text: see the package comment for the order.
func (p *Prep) Normalize(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("normalize: text is not valid UTF-8")
	}
	if p.norm == nil {
		return s, nil
	}
	out, _ := p.norm.Normalize(s, true)
	return out, nil
}

// SplitNormalized is step 3: it splits one normalized non-added segment on
// the added tokens with normalized=true. Without such tokens it returns the
// segment whole.
func (p *Prep) SplitNormalized(normalized string) []Segment {
	return p.added.split(normalized, true, true)
}
