package tokenizer

import (
	"fmt"
	"strconv"
)

// setVocab fills tokens from an id -> text table that must be dense, but
// for gaps (ids no token has) when gaps is set: those are filled with
// placeholders that no merge forms, listed in c.gaps for the caller to mark
// unused (o200k leaves ids 199998 and 200000-200017 to no token).
func (c *conv) setVocab(src string, byID map[int]string, n int, gaps bool) error {
	c.tokens = make([]string, n)
	c.ids = make(map[string]int, n)
	for id := 0; id < n; id++ {
		t, ok := byID[id]
		if !ok && gaps {
			t = fmt.Sprintf("[GAP%d]", id) // a token of that text is a duplicate below
			c.gaps = append(c.gaps, id)
			ok = true
		}
		if !ok {
			return fmt.Errorf("%s: the vocabulary has no token with id %d (ids must run from 0 to %d without gaps)", src, id, n-1)
		}
		if t == "" {
			return fmt.Errorf("%s: token %d is empty", src, id)
		}
		if prev, dup := c.ids[t]; dup {
			return fmt.Errorf("%s: tokens %d and %d are both %q (llama.cpp needs distinct tokens)", src, prev, id, t)
		}
		c.tokens[id] = t
		c.ids[t] = id
	}
	return nil
}

// mergeAdded adds tokenizer.json's added tokens to the vocabulary: an added
// token either repeats a vocabulary entry (same id, same text) or extends
// the vocabulary.
func (c *conv) mergeAdded(src string, vocab map[int]string, n int, added []addedToken) (map[int]string, int, error) {
	byID := make(map[int]string, n+len(added))
	for id, t := range vocab {
		byID[id] = t
	}
	for _, a := range added {
		if a.ID < 0 {
			return nil, 0, fmt.Errorf("%s: added token %q has id %d", src, a.Content, a.ID)
		}
		if t, ok := byID[a.ID]; ok && t != a.Content {
			return nil, 0, fmt.Errorf("%s: added token %q has id %d, which the vocabulary gives to %q", src, a.Content, a.ID, t)
		}
		byID[a.ID] = a.Content
		if a.ID >= n {
			n = a.ID + 1
		}
	}
	c.added = added
	return byID, n, nil
}

// markAdded sets the added tokens' types. llama.cpp, which udgam-ci never
// asks to parse special tokens, matches only user-defined tokens in text,
// so no added token is user-defined: the scoring side matches them all in
// Go as Hugging Face does (Spec.AddedTokens). Special ones are control
// tokens (they stand for no text); the others are normal tokens, whose
// piece is their text.
func (c *conv) markAdded() {
	for _, a := range c.added {
		if a.ID >= len(c.types) {
			continue
		}
		if a.Special {
			c.types[a.ID] = typeControl
		} else {
			c.types[a.ID] = typeNormal
		}
	}
	var literal []string
	for _, a := range c.added {
		literal = append(literal, strconv.Quote(a.Content))
	}
	if len(literal) > 0 {
		c.logf("added tokens matched in text (in Go, as Hugging Face does): %d (%s)", len(literal), sample(literal, 8))
	}
}

// pad extends the vocabulary to config.json's vocab_size with tokens of
// the unused type, which llama.cpp never matches in text and no merge can
// produce; or drops added tokens beyond it.
func (c *conv) pad() error {
	n := c.opts.VocabSize
	if n <= 0 || n == len(c.tokens) {
		return nil
	}
	if n < len(c.tokens) {
		for id := n; id < len(c.tokens); id++ {
			if !c.isAdded(id) {
				return fmt.Errorf("tokenizer has %d tokens but config.json's vocab_size is %d, and token %d %q is not an added token", len(c.tokens), n, id, c.tokens[id])
			}
		}
		c.logf("added tokens with ids %d..%d are beyond config.json's vocab_size %d: left out of the GGUF; text that holds them cannot be scored", n, len(c.tokens)-1, n)
		for _, t := range c.tokens[n:] {
			delete(c.ids, t)
		}
		c.tokens, c.types = c.tokens[:n], c.types[:n]
		if c.scores != nil {
			c.scores = c.scores[:n]
		}
		return nil
	}
	low := float32(0)
	for _, s := range c.scores {
		low = min(low, s)
	}
	first := len(c.tokens)
	for id := first; id < n; id++ {
		name := fmt.Sprintf("[PAD%d]", id-first)
		if _, dup := c.ids[name]; dup {
			return fmt.Errorf("padding token %q is already in the vocabulary", name)
		}
		if x, y, ok := c.buildable(name); ok {
			return fmt.Errorf("padding token %q could be formed from %q and %q by llama.cpp's merges", name, x, y)
		}
		c.ids[name] = id
		c.tokens = append(c.tokens, name)
		c.types = append(c.types, typeUnused)
		if c.scores != nil {
			c.scores = append(c.scores, low-1)
		}
	}
	c.logf("vocabulary padded from %d to config.json's vocab_size %d with unused tokens [PAD0]..[PAD%d] (never matched in text)", first, n, n-first-1)
	return nil
}

// buildable reports whether llama.cpp could form text from two adjacent
// symbols: for SentencePiece any two pieces (or single characters) whose
// concatenation is a token; for BPE only listed merges, which padding is
// never the result of.
func (c *conv) buildable(text string) (string, string, bool) {
	if c.scores == nil {
		return "", "", false
	}
	for i := range text {
		if i == 0 {
			continue
		}
		x, y := text[:i], text[i:]
		if c.symbol(x) && c.symbol(y) {
			return x, y, true
		}
	}
	return "", "", false
}

// symbol reports whether s can be a symbol of llama.cpp's SentencePiece
// merging: a token, or a single character.
func (c *conv) symbol(s string) bool {
	if _, ok := c.ids[s]; ok {
		return true
	}
	return len([]rune(s)) == 1
}

func (c *conv) isAdded(id int) bool {
	for _, a := range c.added {
		if a.ID == id {
			return true
		}
	}
	return false
}
