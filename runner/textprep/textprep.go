// Package textprep prepares text the way the checkpoint's Hugging Face
// tokenizer does before llama.cpp turns it into ids: added tokens are
// matched in the text and emitted as their ids, the text between them is
// normalized (the tokenizer.json normalizer steps llama.cpp does not apply)
// and only then tokenized by llama.cpp. The converter records what is needed
// in the GGUF (tokspec.Spec); the matching and normalizing rules themselves
// live in runner/textprep/hfprep, the one home of Hugging Face's pre-steps,
// which the Go check (runner/hftok) builds on too.
//
// A GGUF without that record (not converted by udgam-ci) is tokenized by
// llama.cpp alone, and text that llama.cpp is known to tokenize differently
// from Hugging Face's tokenizer (a control token's literal) is refused.
package textprep

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/udgamlabs/udgam-ci/ggufspec/tokspec"
	"github.com/udgamlabs/udgam-ci/internal/tokjson"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/textprep/hfprep"
)

// Prep is Hugging Face's text preparation ahead of the pre-tokenizer and
// model: added tokens matched in the raw text, the normalizer on each other
// segment, then the added tokens matched in normalized text (hfprep.Prep).
type Prep interface {
	Segments(text string) ([]hfprep.Segment, error)
}

// TokenByter gives the bytes a token stands for (llama.cpp's piece).
type TokenByter interface {
	TokenBytes(id int32) ([]byte, error)
}

// Tokenizer tokenizes text as the checkpoint's Hugging Face tokenizer does,
// with an inner (llama.cpp) tokenizer for the plain segments.
type Tokenizer struct {
	inner runner.Tokenizer
	prep  Prep // nil: llama.cpp's own preparation (no record in the GGUF)
	// control are the control tokens' texts, refused in text when prep is
	// nil; user are the user-defined tokens' texts, which llama.cpp would
	// match inside a plain segment where Hugging Face's tokenizer did not.
	control, user *literals
	spacePrefix   bool
	// prefixFirst: a space goes before the first segment in Go
	// (tokspec.Spec.SpacePrefixFirst).
	prefixFirst bool
	// missing are the bytes the vocabulary has no token for
	// (tokspec.Spec.MissingBytes).
	missing [256]bool
	record  runfile.TextPrep
}

// Wrap returns a tokenizer that prepares text as spec says before inner
// tokenizes it. inner must not add special tokens (llama.cpp without
// parse_special). A zero Spec (no record) leaves the text to inner.
func Wrap(inner runner.Tokenizer, spec tokspec.Spec) (runner.Tokenizer, error) {
	return wrap(inner, spec, runner.Info{})
}

func wrap(inner runner.Tokenizer, spec tokspec.Spec, info runner.Info) (*Tokenizer, error) {
	t := &Tokenizer{inner: inner, spacePrefix: info.AddSpacePrefix}
	if spec.Source == "" {
		t.record = runfile.TextPrep{By: runfile.PrepLlama}
		t.control = newLiterals(info.ControlTokens)
		return t, nil
	}
	prep, n, err := newPrep(spec)
	if err != nil {
		return nil, err
	}
	t.prep = prep
	t.prefixFirst = spec.SpacePrefixFirst
	for _, b := range spec.MissingBytes {
		if b < 0 || b > 255 {
			return nil, fmt.Errorf("tokenizer record: missing byte %d is not a byte", b)
		}
		t.missing[b] = true
	}
	t.user = newLiterals(info.UserTokens)
	norm, err := describeNormalizer(spec.Normalizer)
	if err != nil {
		return nil, err
	}
	t.record = runfile.TextPrep{By: runfile.PrepHF, Normalizer: norm, AddedTokens: n, Unverified: spec.Unverified}
	return t, nil
}

// Record is the text preparation for the run settings.
func (t *Tokenizer) Record() runfile.TextPrep { return t.record }

// Tokenize returns the ids of text without BOS or other added special
// tokens, special-token literals in the text matched as Hugging Face's
// tokenizer matches them.
func (t *Tokenizer) Tokenize(text string) ([]int32, error) {
	if t.prep == nil {
		if err := t.CheckText(text); err != nil {
			return nil, err
		}
		return t.inner.Tokenize(text)
	}
	segs, err := t.segments(text)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for i, seg := range segs {
		if seg.Added {
			ids = append(ids, seg.ID)
			continue
		}
		text := seg.Text
		if err := t.checkBytes(text); err != nil {
			return nil, err
		}
		if t.spaceFirst(i, seg) {
			text = " " + text
		}
		toks, err := t.inner.Tokenize(text)
		if err != nil {
			return nil, err
		}
		ids = append(ids, toks...)
	}
	return ids, nil
}

// checkBytes refuses text holding a byte the vocabulary has no token for:
// Hugging Face's BPE drops it from the pre-tokenized word, which llama.cpp
// cannot do (it aborts on such a byte).
func (t *Tokenizer) checkBytes(text string) error {
	for i := 0; i < len(text); i++ {
		if t.missing[text[i]] {
			return fmt.Errorf("text %q holds byte 0x%02X at byte %d, which the tokenizer's vocabulary has no token for: Hugging Face's tokenizer drops it, llama.cpp cannot, so the ids would differ", clip(text), text[i], i)
		}
	}
	return nil
}

// spaceFirst says whether segment i of a text gets a space before it:
// Metaspace's prepend_scheme "first" puts "▁" before the segment that
// starts the text, unless it starts with one (a space becomes "▁" first).
func (t *Tokenizer) spaceFirst(i int, seg hfprep.Segment) bool {
	return t.prefixFirst && i == 0 && !seg.Added && seg.Text != "" &&
		!strings.HasPrefix(seg.Text, " ") && !strings.HasPrefix(seg.Text, "▁")
}

// segments prepares text and checks that llama.cpp will not match a
// user-defined token inside a plain segment, where Hugging Face's tokenizer
// did not match it.
func (t *Tokenizer) segments(text string) ([]hfprep.Segment, error) {
	segs, err := t.prep.Segments(text)
	if err != nil {
		return nil, err
	}
	for _, seg := range segs {
		if seg.Added {
			continue
		}
		if lit, at, ok := t.user.find(seg.Text); ok {
			return nil, fmt.Errorf("text %q holds %q at byte %d of a segment Hugging Face's tokenizer leaves as text, but llama.cpp would match it as a user-defined token: the ids would differ", clip(seg.Text), lit, at)
		}
	}
	return segs, nil
}

// CheckText reports text this tokenizer is known to tokenize differently
// from the checkpoint's Hugging Face tokenizer, so callers can refuse it
// before anything is scored: with udgam-ci's record, a byte the vocabulary
// has no token for (checkBytes); without it, a control token's literal,
// which Hugging Face's tokenizer matches as the token and llama.cpp splits
// into pieces.
func (t *Tokenizer) CheckText(text string) error {
	if t.prep != nil {
		return t.checkBytes(text)
	}
	if lit, at, ok := t.control.find(text); ok {
		return fmt.Errorf("the text holds %q at byte %d, the literal of a control token: Hugging Face's tokenizer reads it as that token, llama.cpp as plain text, and this GGUF carries no udgam-ci tokenizer record to match it (convert the checkpoint with `udgam-ci model convert`)", lit, at)
	}
	return nil
}

// FirstTokenBytes is how many bytes at the start of text the first token of
// its ids (first) covers, for scoring without BOS, where the first token is
// not scored and its bytes are left out. Those are the token's own bytes,
// even where it ends inside a character (a byte-level token holding part of
// an emoji). The space a SentencePiece tokenizer puts in front of a segment
// is not in the text and covers nothing; an added token covers its span;
// where the normalizer changed the text under the token, its bytes are not
// in the text, and it covers the original bytes of the characters it reaches.
func (t *Tokenizer) FirstTokenBytes(text string, first int32) (int, error) {
	tb, ok := t.inner.(TokenByter)
	if !ok {
		return 0, fmt.Errorf("scoring without BOS needs the bytes of the first token, which this tokenizer cannot give (use --add-bos yes)")
	}
	piece, err := tb.TokenBytes(first)
	if err != nil {
		return 0, fmt.Errorf("first token: %w", err)
	}
	if t.prep == nil {
		n, err := PieceCover(piece, text, t.spacePrefix, first)
		if err == nil || len(piece) > 0 {
			return n, err
		}
	} else if n, ok, err := t.coverByPiece(text, first, piece); err != nil || ok {
		return n, err
	}
	// llama.cpp shows some tokens as nothing (control tokens, and pieces
	// such as Gemma's runs of "▁"): the token covers the shortest prefix
	// that tokenizes to it alone.
	for k := 1; k <= min(len(text), maxTokenBytes); k++ {
		if k < len(text) && !utf8.RuneStart(text[k]) {
			continue
		}
		if ids, err := t.Tokenize(text[:k]); err == nil && len(ids) == 1 && ids[0] == first {
			return k, nil
		}
	}
	return 0, fmt.Errorf("the first token %d reads %q, which does not start the text", first, piece)
}

// maxTokenBytes bounds the prefixes tried for the first token: no token of
// a real vocabulary is longer.
const maxTokenBytes = 1024

// coverByPiece finds the shortest prefix of the text, ending on a character
// boundary, whose own preparation starts with the whole first token, given
// its piece. When the text itself starts with the piece, the piece's bytes
// are the token's, whether or not they end that prefix; otherwise the
// normalizer changed them and the prefix's original bytes are the token's.
func (t *Tokenizer) coverByPiece(text string, first int32, piece []byte) (int, bool, error) {
	for k := 0; k <= min(len(text), maxTokenBytes); k++ {
		if k < len(text) && !utf8.RuneStart(text[k]) {
			continue
		}
		segs, err := t.prep.Segments(text[:k])
		if err != nil {
			return 0, false, err
		}
		if len(segs) == 0 {
			continue
		}
		if seg := segs[0]; seg.Added {
			// A shorter prefix may match a shorter added token ("\n\n"
			// before "\n\n\n"): only the token itself ends the search.
			if seg.ID == first {
				return k, true, nil
			}
			continue
		}
		if len(piece) == 0 {
			return 0, false, nil
		}
		if n, err := PieceCover(piece, segs[0].Text, t.spacePrefix || t.spaceFirst(0, segs[0]), first); err == nil {
			if n == 0 {
				return 0, true, nil // SentencePiece's lone dummy prefix
			}
			if strings.HasPrefix(text[:k], segs[0].Text[:n]) {
				return n, true, nil
			}
			return k, true, nil
		}
	}
	return 0, false, nil
}

// PieceCover is how many bytes at the start of text a first token whose
// piece is piece covers. With a space prefix (SentencePiece's dummy prefix,
// runner.Info.AddSpacePrefix) the piece starts with a space that is not in
// the text: a lone "▁" covers nothing. Otherwise the piece must start the
// text byte for byte.
func PieceCover(piece []byte, text string, spacePrefix bool, id int32) (int, error) {
	p := string(piece)
	if spacePrefix {
		if !strings.HasPrefix(p, " ") {
			return 0, fmt.Errorf("the first token %d reads %q, but the tokenizer puts a space before the text, so it should start with one", id, p)
		}
		p = p[1:]
	} else if p == "" {
		return 0, fmt.Errorf("the first token %d reads %q, which does not start the text", id, p)
	}
	if !strings.HasPrefix(text, p) {
		return 0, fmt.Errorf("the first token %d reads %q, which does not start the text", id, string(piece))
	}
	return len(p), nil
}

// newPrep builds Hugging Face's pre-steps from the record, and counts the
// added tokens for the run settings.
func newPrep(spec tokspec.Spec) (Prep, int, error) {
	tokens, err := tokjson.ParseAddedTokens(spec.AddedTokens)
	if err != nil {
		return nil, 0, fmt.Errorf("tokenizer record: added_tokens: %w", err)
	}
	norm, err := hfprep.ParseNormalizer(spec.Normalizer)
	if err != nil {
		return nil, 0, fmt.Errorf("tokenizer record: normalizer: %w", err)
	}
	p, err := hfprep.New(norm, tokens)
	if err != nil {
		return nil, 0, fmt.Errorf("tokenizer record: added_tokens: %w", err)
	}
	return p, len(tokens), nil
}

// describeNormalizer names a tokenizer.json normalizer's steps, e.g. "NFC"
// or "Lowercase+NFKC".
func describeNormalizer(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var n struct {
		Type        string            `json:"type"`
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", fmt.Errorf("tokenizer record: normalizer: %w", err)
	}
	if n.Type != "Sequence" {
		return n.Type, nil
	}
	var parts []string
	for _, s := range n.Normalizers {
		d, err := describeNormalizer(s)
		if err != nil {
			return "", err
		}
		if d != "" {
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, "+"), nil
}

func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	for i := 40; i > 0; i-- {
		if i < len(s) && (s[i]&0xC0) != 0x80 {
			return s[:i] + "..."
		}
	}
	return s[:40] + "..."
}
