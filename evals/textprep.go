package evals

import "github.com/udgamlabs/udgam-ci/runfile"

// TextChecker is a tokenizer that knows text it would tokenize differently
// from the checkpoint's Hugging Face tokenizer (runner/textprep). Both tests
// ask it about every text before anything is scored, so such text is
// refused up front, naming the document or item.
type TextChecker interface {
	CheckText(text string) error
}

// CheckText asks m about text when m can tell; other models accept it.
func CheckText(m any, text string) error {
	if c, ok := m.(TextChecker); ok {
		return c.CheckText(text)
	}
	return nil
}

// TextPrepOf is the text preparation a model records for the run settings
// (runner/textprep's models do), nil when it does not say.
func TextPrepOf(m any) *runfile.TextPrep {
	if p, ok := m.(interface{ TextPrep() runfile.TextPrep }); ok {
		tp := p.TextPrep()
		return &tp
	}
	return nil
}
