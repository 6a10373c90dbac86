// Package tokenizer converts a Hugging Face checkpoint's tokenizer files
// (tokenizer.json, tokenizer.model, or vocab.json and merges.txt, with
// tokenizer_config.json and special_tokens_map.json) into llama.cpp's GGUF
// tokenizer keys, and into the tokspec.Spec that says what the scoring side
// must do in Go (normalizer steps, added-token matching) so that the ids
// equal those of the Hugging Face tokenizer.
//
// A conversion goes one way, a file for each step: read.go parses every
// file it uses, once; the decisions follow, each from what was read
// (vocab.go the vocabulary and the added tokens, bpe.go a byte-level BPE,
// spm.go a SentencePiece BPE, special.go BOS, EOS and the chat template),
// describing what they decide in the report and refusing what llama.cpp
// cannot reproduce exactly, with an error naming the configuration, unless
// Options.AllowUnverified, which records the reason in Spec.Unverified
// instead; write.go writes the GGUF keys and the Spec.
package tokenizer

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/udgamlabs/udgam-ci/ggufspec/tokspec"
)

// Options control a tokenizer conversion.
type Options struct {
	// AllowUnverified converts a tokenizer whose equality with the Hugging
	// Face tokenizer is not established, recording why in Spec.Unverified.
	AllowUnverified bool
	// VocabSize is config.json's vocab_size: the vocabulary is padded to it
	// with tokens that never match text. Zero means no padding.
	VocabSize int
}

// Result is a converted tokenizer.
type Result struct {
	// KV holds every tokenizer.ggml.* key to write.
	KV map[string]any
	// Spec is the record the scoring side applies (written under tokspec.Key).
	Spec tokspec.Spec
	// Report says, one line each, what the conversion decided.
	Report []string
	// BOS and EOS are the ids written, -1 when the tokenizer has none.
	BOS, EOS int
	// Warnings are what the user must see about the checkpoint (also in
	// Report): a tokenizer that adds BOS where its config says not to.
	Warnings []string
}

// GGUF token types (llama.cpp's llama_token_type).
const (
	typeNormal      int32 = 1
	typeUnknown     int32 = 2
	typeControl     int32 = 3
	typeUserDefined int32 = 4
	typeUnused      int32 = 5
	typeByte        int32 = 6
)

// Convert reads the tokenizer files in fsys, decides how llama.cpp
// reproduces them, and writes the result.
func Convert(fsys fs.FS, opts Options) (*Result, error) {
	src, err := read(fsys)
	if err != nil {
		return nil, err
	}
	c := &conv{source: src, opts: opts, bos: -1, eos: -1, unk: -1}
	if err := c.decide(); err != nil {
		return nil, err
	}
	return c.result()
}

// conv is one conversion: what was read, and what is decided from it.
type conv struct {
	*source
	opts Options

	// The vocabulary (vocab.go, bpe.go, spm.go).
	tokens []string
	types  []int32
	scores []float32 // SentencePiece only
	merges []string  // byte-level BPE only
	added  []addedToken
	ids    map[string]int
	gaps   []int // ids no token had, filled by setVocab

	// Whether llama.cpp's SentencePiece tokenizer puts a space first
	// (spm.go), and the special tokens' ids, -1 for none (special.go).
	spacePrefix   bool
	bos, eos, unk int

	spec       tokspec.Spec
	report     []string
	warnings   []string
	unverified []string
}

// decide takes every decision in turn: the vocabulary from the files read,
// its padding to config.json's vocab_size, then the special tokens.
func (c *conv) decide() error {
	var err error
	switch {
	case c.spm != nil:
		err = c.sentencePieceModel()
	case c.tj != nil:
		switch t := c.tj.Model.Type; {
		case t == "BPE" && c.tj.byteLevel:
			err = c.byteLevelJSON()
		case t == "BPE" && c.tj.Model.ByteFallback:
			err = c.sentencePieceJSON()
		case t == "BPE":
			return fmt.Errorf("tokenizer.json: a BPE model that is neither byte-level (no ByteLevel pre-tokenizer) nor SentencePiece-style (byte_fallback is false) is not supported; supported: byte-level BPE, SentencePiece BPE with byte fallback")
		default:
			return fmt.Errorf("tokenizer.json: model type %q is not supported by the converter (llama.cpp's tokenizers that reproduce it exactly are not wired); supported: byte-level BPE, SentencePiece BPE with byte fallback", t)
		}
	default:
		err = c.byteLevelFiles()
	}
	if err != nil {
		return err
	}
	if err := c.pad(); err != nil {
		return err
	}
	return c.special()
}

// refuse fails the conversion with msg, or with AllowUnverified records it
// and lets the conversion go on.
func (c *conv) refuse(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if !c.opts.AllowUnverified {
		return errors.New(msg + " (--allow-unverified-tokenizer converts it anyway, marking every run as unverified)")
	}
	c.unverified = append(c.unverified, msg)
	c.logf("UNVERIFIED: %s", msg)
	return nil
}

func (c *conv) logf(format string, args ...any) {
	c.report = append(c.report, fmt.Sprintf(format, args...))
}
