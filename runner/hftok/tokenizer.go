// Package hftok encodes text exactly as Hugging Face's tokenizers library
// does with a tokenizer.json (encode with add_special_tokens=false), for the
// components small language models use, and refuses, naming the component,
// whatever it does not implement. It does not use llama.cpp: it is the
// independent side that llama.cpp's ids are checked against, and its
// normalizer and added-token splitting are also the production scoring
// path's (Normalize, SplitAdded, SplitNormalized, Segments).
//
// Hugging Face's order for one text (tokenizers' Tokenizer::encode_single_sequence,
// AddedVocabulary::extract_and_normalize, do_pre_tokenize, do_tokenize):
//
//  1. SplitAdded: on the raw text, match the added tokens whose normalized
//     flag is false (special or not: add_special_tokens=false does not stop
//     it), leftmost-longest, honouring single_word, lstrip and rstrip.
//  2. Normalize each remaining segment on its own (a Prepend normalizer, for
//     one, prepends to every segment, not once per text).
//  3. SplitNormalized: in each normalized segment, match the added tokens
//     whose normalized flag is true, against their normalized content.
//  4. Pre-tokenize each segment still left on its own, then run the model
//     on each piece. Added tokens map straight to their ids.
//
// Segments runs steps 1-3 and returns what a second engine must tokenize:
// the added tokens' ids and normalized text for steps 4.
//
// Implemented: models BPE (merges as strings or pairs, ignore_merges,
// byte_fallback, unk and fuse_unk, subword prefix/suffix) and Unigram
// (SentencePiece's optimized Viterbi, fused unk, byte_fallback);
// normalizers NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Replace,
// Prepend, Strip, BertNormalizer, Sequence; pre-tokenizers ByteLevel,
// Split, Digits, Metaspace, Punctuation, Whitespace, WhitespaceSplit,
// BertPreTokenizer, CharDelimiterSplit, Sequence. Refused by name:
// WordPiece and WordLevel models, the Precompiled, Nmt and ByteLevel
// normalizers, UnicodeScripts and other pre-tokenizers, BPE dropout,
// truncation and padding. Post-processors and decoders do not change ids
// when no special tokens are added, so known ones are accepted and not run.
package hftok

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// Tokenizer is a parsed tokenizer.json. It is safe for concurrent use.
type Tokenizer struct {
	added *addedVocab
	norm  normalizer   // nil: none
	pre   preTokenizer // nil: none
	model model
}

// Load parses DIR/tokenizer.json.
func Load(dir string) (*Tokenizer, error) {
	path := filepath.Join(dir, "tokenizer.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

type fileJSON struct {
	Truncation    json.RawMessage `json:"truncation"`
	Padding       json.RawMessage `json:"padding"`
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         json.RawMessage `json:"model"`
}

// Parse reads the contents of a tokenizer.json.
func Parse(tokenizerJSON []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(tokenizerJSON, &f); err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	if !isNull(f.Truncation) {
		return nil, fmt.Errorf("tokenizer.json sets truncation: not implemented (it changes the ids of long texts)")
	}
	if !isNull(f.Padding) {
		return nil, fmt.Errorf("tokenizer.json sets padding: not implemented (it adds pad ids)")
	}
	if len(f.Model) == 0 || isNull(f.Model) {
		return nil, fmt.Errorf("tokenizer.json has no model")
	}
	model, err := parseModel(f.Model)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	t := &Tokenizer{model: model}
	if t.norm, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	if t.pre, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	if err := checkPostProcessor(f.PostProcessor); err != nil {
		return nil, fmt.Errorf("post_processor: %w", err)
	}
	if t.added, err = newAddedVocab(f.AddedTokens, model, t.norm); err != nil {
		return nil, fmt.Errorf("added_tokens: %w", err)
	}
	return t, nil
}

// Encode returns the ids Hugging Face's tokenizer gives text with
// add_special_tokens=false. Text must be valid UTF-8.
func (t *Tokenizer) Encode(text string) ([]int32, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("encode: text is not valid UTF-8")
	}
	if t.model == nil {
		return nil, fmt.Errorf("encode: this tokenizer only prepares text (ParsePrep): it has no model")
	}
	var ids []int32
	for _, seg := range t.segments(text) {
		if seg.Added {
			ids = append(ids, seg.ID)
			continue
		}
		pieces := []piece{{s: seg.Text, first: seg.first}}
		if t.pre != nil {
			pieces = t.pre.preTokenize(pieces)
		}
		for _, p := range pieces {
			var err error
			if ids, err = t.model.tokenize(p.s, ids); err != nil {
				return nil, fmt.Errorf("encode %q: %w", p.s, err)
			}
		}
	}
	return ids, nil
}

// Normalize applies the tokenizer.json's normalizer to s (s unchanged when
// there is none). Apply it to each non-added segment from SplitAdded, never
// to the whole text: see the package comment for the order.
func (t *Tokenizer) Normalize(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("normalize: text is not valid UTF-8")
	}
	if t.norm == nil {
		return s, nil
	}
	out, _ := t.norm.normalize(s, true)
	return out, nil
}

// HasNormalizer reports whether the tokenizer.json has a normalizer.
func (t *Tokenizer) HasNormalizer() bool { return t.norm != nil }

// Segments runs Hugging Face's steps before pre-tokenization on text
// (SplitAdded, Normalize, SplitNormalized; see the package comment): the
// non-added segments it returns are normalized, ready for the
// pre-tokenizer and model, and must not be normalized again. Empty
// segments are dropped, as Hugging Face drops them.
func (t *Tokenizer) Segments(text string) ([]Segment, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("segments: text is not valid UTF-8")
	}
	return plain(t.segments(text)), nil
}

// segments is Segments keeping whether each segment starts the text (a
// Metaspace pre-tokenizer with prepend_scheme "first" needs it).
func (t *Tokenizer) segments(text string) []segment {
	var out []segment
	for _, s := range t.added.split(text, true, false) {
		if s.Added {
			out = append(out, s)
			continue
		}
		norm, first := s.Text, s.first
		if t.norm != nil {
			norm, first = t.norm.normalize(s.Text, first)
		}
		out = append(out, t.added.split(norm, first, true)...)
	}
	return out
}

func isNull(m json.RawMessage) bool {
	return len(m) == 0 || bytes.Equal(bytes.TrimSpace(m), []byte("null"))
}

// typeOf reads the "type" field of a component.
func typeOf(m json.RawMessage) (string, error) {
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

// checkPostProcessor accepts the post-processors that add no ids when
// add_special_tokens is false.
func checkPostProcessor(m json.RawMessage) error {
	if isNull(m) {
		return nil
	}
	typ, err := typeOf(m)
	if err != nil {
		return err
	}
	switch typ {
	case "TemplateProcessing", "ByteLevel", "RobertaProcessing", "BertProcessing":
		return nil
	case "Sequence":
		_, err := parseSequence(m, "processors", func(p json.RawMessage) (any, error) { return nil, checkPostProcessor(p) })
		return err
	}
	return fmt.Errorf("type %q is not implemented", typ)
}

// parseSequence parses the list under key of a Sequence component with
// parse, naming the entry that fails and leaving out null ones.
func parseSequence[T comparable](m json.RawMessage, key string, parse func(json.RawMessage) (T, error)) ([]T, error) {
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
