package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// tokenizerJSON is the part of a Hugging Face tokenizer.json the converter
// reads. The pipeline stages stay raw: each is described and matched as a
// whole, so that a field the converter does not know is never dropped
// silently.
type tokenizerJSON struct {
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         struct {
		Type                    string          `json:"type"`
		Vocab                   json.RawMessage `json:"vocab"`
		Merges                  json.RawMessage `json:"merges"`
		ByteFallback            bool            `json:"byte_fallback"`
		IgnoreMerges            bool            `json:"ignore_merges"`
		UnkToken                *string         `json:"unk_token"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
		Dropout                 *float64        `json:"dropout"`
	} `json:"model"`
}

// addedToken is one entry of tokenizer.json's added_tokens, as Spec
// records it.
type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

func readTokenizerJSON(fsys fs.FS) (*tokenizerJSON, error) {
	b, err := fs.ReadFile(fsys, "tokenizer.json")
	if err != nil {
		return nil, err
	}
	var tj tokenizerJSON
	if err := json.Unmarshal(b, &tj); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	return &tj, nil
}

// vocabByID reads a BPE model's vocab object (token -> id).
func (tj *tokenizerJSON) vocabByID() (map[int]string, int, error) {
	var v map[string]int
	if err := json.Unmarshal(tj.Model.Vocab, &v); err != nil {
		return nil, 0, fmt.Errorf("tokenizer.json: model.vocab: %w", err)
	}
	byID := make(map[int]string, len(v))
	n := 0
	for t, id := range v {
		if prev, dup := byID[id]; dup {
			return nil, 0, fmt.Errorf("tokenizer.json: model.vocab gives id %d to both %q and %q", id, prev, t)
		}
		if id < 0 {
			return nil, 0, fmt.Errorf("tokenizer.json: model.vocab: token %q has id %d", t, id)
		}
		byID[id] = t
		n = max(n, id+1)
	}
	return byID, n, nil
}

// mergePairs reads model.merges, written either as "a b" strings or as
// [a, b] pairs.
func (tj *tokenizerJSON) mergePairs() ([][2]string, error) {
	if len(tj.Model.Merges) == 0 || string(tj.Model.Merges) == "null" {
		return nil, nil
	}
	var ss []string
	if err := json.Unmarshal(tj.Model.Merges, &ss); err == nil {
		out := make([][2]string, len(ss))
		for i, s := range ss {
			a, b, ok := strings.Cut(s, " ")
			if !ok || a == "" || b == "" || strings.Contains(b, " ") {
				return nil, fmt.Errorf("tokenizer.json: merge %d %q is not two pieces separated by a space", i, s)
			}
			out[i] = [2]string{a, b}
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(tj.Model.Merges, &pairs); err != nil {
		return nil, fmt.Errorf("tokenizer.json: model.merges: want strings or pairs: %w", err)
	}
	out := make([][2]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 || p[0] == "" || p[1] == "" {
			return nil, fmt.Errorf("tokenizer.json: merge %d %q is not a pair", i, p)
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

// step is one stage of a pre-tokenizer or normalizer, with the fields the
// converter matches on; raw keeps the whole object.
type step struct {
	Type    string `json:"type"`
	Pattern *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior         string            `json:"behavior"`
	Invert           bool              `json:"invert"`
	IndividualDigits bool              `json:"individual_digits"`
	AddPrefixSpace   *bool             `json:"add_prefix_space"`
	UseRegex         *bool             `json:"use_regex"`
	Replacement      string            `json:"replacement"`
	PrependScheme    string            `json:"prepend_scheme"`
	Split            *bool             `json:"split"`
	Content          *string           `json:"content"`
	Prepend          *string           `json:"prepend"`
	PreTokenizers    []json.RawMessage `json:"pretokenizers"`
	Normalizers      []json.RawMessage `json:"normalizers"`
	raw              json.RawMessage
}

// steps flattens a pipeline stage: a Sequence gives its members in order,
// null gives none.
func steps(raw json.RawMessage, what string) ([]step, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s step
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %s: %w", what, err)
	}
	s.raw = raw
	if s.Type != "Sequence" {
		return []step{s}, nil
	}
	var out []step
	var decoders struct {
		Decoders []json.RawMessage `json:"decoders"`
	}
	_ = json.Unmarshal(raw, &decoders) // a decoder Sequence, for isByteLevel
	for _, m := range append(append(s.PreTokenizers, s.Normalizers...), decoders.Decoders...) {
		sub, err := steps(m, what)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return out, nil
}

// describe writes a step in the short form error messages and the
// pre-tokenizer table use. Only fields that change ids are named.
func (s step) describe() string {
	b := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	switch s.Type {
	case "ByteLevel":
		// Hugging Face's defaults: add_prefix_space and use_regex true.
		return fmt.Sprintf("ByteLevel(add_prefix_space=%v, use_regex=%v)", b(s.AddPrefixSpace, true), b(s.UseRegex, true))
	case "Digits":
		return fmt.Sprintf("Digits(individual_digits=%v)", s.IndividualDigits)
	case "Split":
		return fmt.Sprintf("Split(%s, behavior=%s, invert=%v)", s.pattern(), s.Behavior, s.Invert)
	case "Metaspace":
		return fmt.Sprintf("Metaspace(replacement=%q, prepend_scheme=%q, split=%v)", s.Replacement, s.PrependScheme, b(s.Split, true))
	case "Replace":
		return fmt.Sprintf("Replace(%s, content=%q)", s.pattern(), deref(s.Content))
	case "Prepend":
		return fmt.Sprintf("Prepend(%q)", deref(s.Prepend))
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(s.raw, &fields) == nil && len(fields) == 1 {
		return s.Type // NFC, Lowercase, ...
	}
	var buf bytes.Buffer
	if json.Compact(&buf, s.raw) != nil {
		return string(s.raw)
	}
	return buf.String()
}

func (s step) pattern() string {
	switch {
	case s.Pattern == nil:
		return "pattern=none"
	case s.Pattern.Regex != nil:
		return "Regex=" + strconv.Quote(*s.Pattern.Regex)
	case s.Pattern.String != nil:
		return "String=" + strconv.Quote(*s.Pattern.String)
	}
	return "pattern=none"
}

// isString reports whether the step's pattern is the literal s.
func (s step) isString(lit string) bool {
	return s.Pattern != nil && s.Pattern.String != nil && *s.Pattern.String == lit && s.Pattern.Regex == nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// describeAll joins a pipeline's steps.
func describeAll(ss []step) string {
	if len(ss) == 0 {
		return "none"
	}
	d := make([]string, len(ss))
	for i, s := range ss {
		d[i] = s.describe()
	}
	return strings.Join(d, " + ")
}

// isByteLevel reports whether the tokenizer maps bytes to GPT-2's printable
// characters (a ByteLevel pre-tokenizer or decoder).
func (tj *tokenizerJSON) isByteLevel() bool {
	for _, stage := range []json.RawMessage{tj.PreTokenizer, tj.Decoder} {
		ss, err := steps(stage, "")
		if err != nil {
			continue
		}
		for _, s := range ss {
			if s.Type == "ByteLevel" {
				return true
			}
		}
	}
	return false
}
