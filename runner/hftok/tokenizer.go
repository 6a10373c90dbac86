// Package hftok encodes text exactly as Hugging Face's tokenizers library
// does with a tokenizer.json (encode with add_special_tokens=false), for the
// components small language models use, and refuses, naming the component,
// whatever it does not implement. It does not use llama.cpp: it is the Go
// side that `model check-tokenizer` compares llama.cpp's ids with, a check
// and never on the scoring path.
//
// Hugging Face's order for one text (tokenizers' Tokenizer::encode_single_sequence,
// do_pre_tokenize, do_tokenize): the added tokens are matched and the
// normalizer applied between them as runner/textprep/hfprep does (the
// production preparation, which this package runs too: Segments,
// SplitAdded, Normalize, SplitNormalized), then each segment left is
// pre-tokenized on its own and the model run on each piece. Added tokens
// map straight to their ids. What this package adds to hfprep is the
// check of the added tokens' ids against the model, the pre-tokenizers and
// the models.
//
// Implemented: models BPE (merges as strings or pairs, ignore_merges,
// byte_fallback, unk and fuse_unk, subword prefix/suffix) and Unigram
// (SentencePiece's optimized Viterbi, fused unk, byte_fallback);
// normalizers as hfprep; pre-tokenizers ByteLevel, Split, Digits,
// Metaspace, Punctuation, Whitespace, WhitespaceSplit, BertPreTokenizer,
// CharDelimiterSplit, Sequence. Refused by name: WordPiece and WordLevel
// models, the normalizers hfprep refuses, UnicodeScripts and other
// pre-tokenizers, BPE dropout, truncation and padding. Post-processors and
// decoders do not change ids when no special tokens are added, so known
// ones are accepted and not run.
package hftok

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/udgamlabs/udgam-ci/internal/tokjson"
	"github.com/udgamlabs/udgam-ci/runner/textprep/hfprep"
)

// Tokenizer is a parsed tokenizer.json. It is safe for concurrent use.
type Tokenizer struct {
	prep  *hfprep.Prep
	pre   preTokenizer // nil: none
	model model
}

// Segment is one part of a text after added-token splitting (hfprep).
type Segment = hfprep.Segment

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

// Parse reads the contents of a tokenizer.json.
func Parse(tokenizerJSON []byte) (*Tokenizer, error) {
	f, err := tokjson.Parse(tokenizerJSON)
	if err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	if !tokjson.IsNull(f.Truncation) {
		return nil, fmt.Errorf("tokenizer.json sets truncation: not implemented (it changes the ids of long texts)")
	}
	if !tokjson.IsNull(f.Padding) {
		return nil, fmt.Errorf("tokenizer.json sets padding: not implemented (it adds pad ids)")
	}
	if tokjson.IsNull(f.Model.Raw) {
		return nil, fmt.Errorf("tokenizer.json has no model")
	}
	model, err := parseModel(f.Model.Raw)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	t := &Tokenizer{model: model}
	norm, err := hfprep.ParseNormalizer(f.Normalizer)
	if err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	if t.pre, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	if err := checkPostProcessor(f.PostProcessor); err != nil {
		return nil, fmt.Errorf("post_processor: %w", err)
	}
	if err := checkAddedIDs(f.AddedTokens, model); err != nil {
		return nil, fmt.Errorf("added_tokens: %w", err)
	}
	if t.prep, err = hfprep.New(norm, f.AddedTokens); err != nil {
		return nil, fmt.Errorf("added_tokens: %w", err)
	}
	return t, nil
}

// checkAddedIDs refuses an added token whose id is not the one Hugging
// Face's tokenizer gives it: the model's id for its content, or else the
// next free id, whatever the file says; rather than guess which the model
// was trained with. The first token listed twice ends the check: hfprep.New
// refuses it.
func checkAddedIDs(tokens []tokjson.AddedToken, m model) error {
	seen := map[string]bool{}
	next := int32(m.size()) // the id tokenizers gives the next token not in the vocabulary
	for _, a := range tokens {
		if a.Content == "" {
			continue // Hugging Face ignores empty added tokens
		}
		if seen[a.Content] {
			return nil
		}
		seen[a.Content] = true
		want, inVocab := m.id(a.Content)
		if !inVocab {
			want = next
			next++
		}
		if int(want) != a.ID {
			return fmt.Errorf("added token %q has id %d, but Hugging Face's tokenizer gives it %d", a.Content, a.ID, want)
		}
	}
	return nil
}

// Encode returns the ids Hugging Face's tokenizer gives text with
// add_special_tokens=false. Text must be valid UTF-8.
func (t *Tokenizer) Encode(text string) ([]int32, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("encode: text is not valid UTF-8")
	}
	var ids []int32
	for _, seg := range t.prep.Split(text) {
		if seg.Added {
			ids = append(ids, seg.ID)
			continue
		}
		pieces := []piece{{s: seg.Text, first: seg.First}}
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

// Segments is hfprep.Prep.Segments: the added tokens and the normalized
// text between them, before pre-tokenization.
func (t *Tokenizer) Segments(text string) ([]Segment, error) { return t.prep.Segments(text) }

// SplitAdded is hfprep.Prep.SplitAdded.
func (t *Tokenizer) SplitAdded(text string) []Segment { return t.prep.SplitAdded(text) }

// Normalize is hfprep.Prep.Normalize.
func (t *Tokenizer) Normalize(s string) (string, error) { return t.prep.Normalize(s) }

// SplitNormalized is hfprep.Prep.SplitNormalized.
func (t *Tokenizer) SplitNormalized(normalized string) []Segment {
	return t.prep.SplitNormalized(normalized)
}

// checkPostProcessor accepts the post-processors that add no ids when
// add_special_tokens is false.
func checkPostProcessor(m json.RawMessage) error {
	if tokjson.IsNull(m) {
		return nil
	}
	typ, err := tokjson.TypeOf(m)
	if err != nil {
		return err
	}
	switch typ {
	case "TemplateProcessing", "ByteLevel", "RobertaProcessing", "BertProcessing":
		return nil
	case "Sequence":
		_, err := tokjson.ParseSequence(m, "processors", func(p json.RawMessage) (any, error) { return nil, checkPostProcessor(p) })
		return err
	}
	return fmt.Errorf("type %q is not implemented", typ)
}
