package textprep

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/udgamlabs/udgam-ci/ggufspec/tokspec"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// Model is a loaded model whose Tokenize prepares text as its GGUF says:
// the production path of both tests.
type Model struct {
	runner.Model
	tok *Tokenizer
	// info, when set, is what Info reports: the inner model's, with the
	// tokenizer record it was given (WrapModelAs).
	info *runner.Info
}

// WrapModel wraps m's tokenizer with the text preparation its GGUF records
// (m.Info().TokenizerSpec), or with llama.cpp's own preparation and its
// known-inexact cases refused when the GGUF records none.
func WrapModel(m runner.Model) (*Model, error) {
	info := m.Info()
	var spec tokspec.Spec
	if info.TokenizerSpec != nil {
		spec = *info.TokenizerSpec
	} else if info.TokenizerModel == "gpt2" && info.TokenizerPre == "" {
		// llama.cpp splits such text with its "default" rules, which are
		// no Hugging Face tokenizer's.
		return nil, errors.New("the GGUF names no pre-tokenizer (tokenizer.ggml.pre) and carries no udgam-ci tokenizer record: llama.cpp would split text by its default rules, which match no Hugging Face tokenizer exactly (convert the checkpoint with `udgam-ci model convert`)")
	}
	tok, err := wrap(m, spec, info)
	if err != nil {
		return nil, err
	}
	return &Model{Model: m, tok: tok}, nil
}

// WrapModelAs wraps m, which carries no udgam-ci tokenizer record, with
// ref's record: a GGUF another converter (llama.cpp's) made from the same
// checkpoint as ref tokenizes alike field by field (runner.TokenizerDiff)
// and so must prepare text as ref does, and its runs record ref's
// tokenizer and preparation. Refused when the tokenizers differ, when ref
// has no record or when m has one of its own.
func WrapModelAs(m runner.Model, ref runner.Info) (*Model, error) {
	info := m.Info()
	if d := runner.TokenizerDiff(ref, info); len(d) > 0 {
		return nil, fmt.Errorf("cannot prepare text as %s does: the tokenizers differ in %s", ref.Path, strings.Join(d, ", "))
	}
	if ref.TokenizerSpec == nil || info.TokenizerSpec != nil {
		return nil, errors.New("internal: WrapModelAs needs a reference with a tokenizer record and a model without one")
	}
	info.TokenizerSpec, info.TokenizerSHA256 = ref.TokenizerSpec, ref.TokenizerSHA256
	tok, err := wrap(m, *ref.TokenizerSpec, info)
	if err != nil {
		return nil, err
	}
	return &Model{Model: m, tok: tok, info: &info}, nil
}

// Info is the inner model's, with the record WrapModelAs gave it.
func (m *Model) Info() runner.Info {
	if m.info != nil {
		return *m.info
	}
	return m.Model.Info()
}

// Tokenize implements runner.Tokenizer with the text preparation.
func (m *Model) Tokenize(text string) ([]int32, error) { return m.tok.Tokenize(text) }

// ScoreEach is the inner model's (runner.ScoreEach): the wrapper changes
// how text is tokenized, not how it is scored.
func (m *Model) ScoreEach(ctx context.Context, reqs []runner.Request, done func(int, runner.Result) error) error {
	return runner.ScoreEach(ctx, m.Model, reqs, done)
}

// TokenBytes is the inner model's piece of a token.
func (m *Model) TokenBytes(id int32) ([]byte, error) {
	tb, ok := m.Model.(TokenByter)
	if !ok {
		return nil, errors.New("this model cannot give the bytes of its tokens")
	}
	return tb.TokenBytes(id)
}

// FirstTokenBytes: see Tokenizer.FirstTokenBytes.
func (m *Model) FirstTokenBytes(text string, first int32) (int, error) {
	return m.tok.FirstTokenBytes(text, first)
}

// CheckText: see Tokenizer.CheckText.
func (m *Model) CheckText(text string) error { return m.tok.CheckText(text) }

// TextPrep is the text preparation for the run settings.
func (m *Model) TextPrep() runfile.TextPrep { return m.tok.Record() }

// Close closes the inner model when it has a Close.
func (m *Model) Close() error {
	if c, ok := m.Model.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// Unwrap is the inner model.
func (m *Model) Unwrap() runner.Model { return m.Model }
