package hftok

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Segment is one part of a text after added-token splitting: an added token
// (Added, with its ID; Text is what it matched, with any whitespace its
// lstrip/rstrip took) or text for the normalizer, pre-tokenizer and model.
type Segment struct {
	Text  string
	ID    int32
	Added bool
}

// segment is a Segment that knows whether it starts the text.
type segment struct {
	Segment
	first bool
}

// addedToken is one entry of tokenizer.json's added_tokens.
type addedToken struct {
	ID         int32
	Content    string
	SingleWord bool
	LStrip     bool
	RStrip     bool
	Normalized bool
	Special    bool
}

func (a *addedToken) UnmarshalJSON(b []byte) error {
	var j struct {
		ID         *int32 `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized *bool  `json:"normalized"`
		Special    bool   `json:"special"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.ID == nil {
		return fmt.Errorf("added token %q has no id", j.Content)
	}
	*a = addedToken{ID: *j.ID, Content: j.Content, SingleWord: j.SingleWord, LStrip: j.LStrip,
		RStrip: j.RStrip, Normalized: true, Special: j.Special}
	if j.Normalized != nil { // Hugging Face's default is true
		a.Normalized = *j.Normalized
	}
	return nil
}

// addedVocab matches added tokens in text: raw holds the tokens with
// normalized=false (matched on raw text), norm those with normalized=true
// (matched, by their normalized content, on normalized text).
type addedVocab struct {
	tokens    []addedToken
	raw, norm trie
}

func newAddedVocab(tokens []addedToken, m model, n normalizer) (*addedVocab, error) {
	v := &addedVocab{raw: newTrie(), norm: newTrie()}
	seen := map[string]int32{}
	next := int32(0) // the id tokenizers gives the next token not in the vocabulary
	if m != nil {
		next = int32(m.size())
	}
	for _, a := range tokens {
		if a.Content == "" {
			continue // Hugging Face ignores empty added tokens
		}
		if id, dup := seen[a.Content]; dup {
			return nil, fmt.Errorf("%q is listed twice (ids %d and %d): not implemented", a.Content, id, a.ID)
		}
		seen[a.Content] = a.ID
		// Hugging Face gives an added token the model's id for its content,
		// or the next free id, whatever the file says; refuse a file where
		// the two differ rather than guess which the model was trained with.
		want, inVocab := a.ID, true // no model (ParsePrep): the converter checked the ids
		if m != nil {
			want, inVocab = m.id(a.Content)
		}
		if !inVocab {
			want = next
			next++
		}
		if want != a.ID {
			return nil, fmt.Errorf("added token %q has id %d, but Hugging Face's tokenizer gives it %d", a.Content, a.ID, want)
		}
		i := int32(len(v.tokens))
		v.tokens = append(v.tokens, a)
		if !a.Normalized {
			v.raw.add(a.Content, i)
			continue
		}
		pattern := a.Content
		if n != nil {
			pattern, _ = n.normalize(a.Content, true)
		}
		if pattern != "" {
			v.norm.add(pattern, i)
		}
	}
	return v, nil
}

// SplitAdded is step 1 of Hugging Face's order (package comment): it splits
// raw text on the added tokens with normalized=false. Normalize each
// non-added segment, then pass it to SplitNormalized. Empty segments are
// dropped.
func (t *Tokenizer) SplitAdded(text string) []Segment {
	return plain(t.added.split(text, true, false))
}

// SplitNormalized is step 3: it splits one normalized non-added segment on
// the added tokens with normalized=true. Without such tokens it returns the
// segment whole.
func (t *Tokenizer) SplitNormalized(normalized string) []Segment {
	return plain(t.added.split(normalized, true, true))
}

// HasNormalizedAdded reports whether any added token has normalized=true,
// that is whether SplitNormalized can split anything.
func (t *Tokenizer) HasNormalizedAdded() bool { return len(t.added.norm.nodes[0].next) > 0 }

func plain(segs []segment) []Segment {
	out := make([]Segment, len(segs))
	for i, s := range segs {
		out[i] = s.Segment
	}
	return out
}

// split mirrors tokenizers' AddedVocabulary::find_matches: leftmost-longest
// matches scanned left to right (a discarded match is skipped, not
// rescanned), single_word checked on the text around the match, lstrip and
// rstrip widening the match over whitespace. first says whether text
// starts the whole text; the segment at offset 0 keeps it.
func (v *addedVocab) split(text string, first, normalized bool) []segment {
	tr := &v.raw
	if normalized {
		tr = &v.norm
	}
	var out []segment
	push := func(start, stop int, tok *addedToken) {
		s := segment{Segment: Segment{Text: text[start:stop]}, first: first && start == 0}
		if tok != nil {
			s.ID, s.Added = tok.ID, true
		}
		out = append(out, s)
	}
	done := 0 // end of the last accepted match
	for pos := 0; pos < len(text); {
		ti, start, end, ok := tr.find(text, pos)
		if !ok {
			break
		}
		pos = end
		tok := &v.tokens[ti]
		stop := end
		if tok.SingleWord {
			startSpace := start == 0 || !endsWithWord(text[:start])
			stopSpace := stop == len(text) || !startsWithWord(text[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if tok.LStrip {
			start = max(len(strings.TrimRightFunc(text[:start], isSpace)), done)
		}
		if tok.RStrip {
			stop = len(text) - len(strings.TrimLeftFunc(text[stop:], isSpace))
		}
		if done < start {
			push(done, start, nil)
		}
		push(start, stop, tok)
		done = stop
	}
	if done < len(text) {
		push(done, len(text), nil)
	}
	return out
}

// isSpace is Unicode White_Space, as Rust's char::is_whitespace and its
// regex \s.
func isSpace(r rune) bool { return unicode.Is(unicode.White_Space, r) }

// isWordChar is Rust regex's Unicode \w: Alphabetic, marks, decimal
// digits, connector punctuation and joiners.
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r) ||
		unicode.Is(unicode.M, r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r) ||
		unicode.Is(unicode.Join_Control, r)
}

func endsWithWord(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordChar(r)
}

func startsWithWord(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordChar(r)
}

// trie finds, from a position on, the leftmost start where some pattern
// matches and the longest pattern there (Aho-Corasick's LeftmostLongest).
type trie struct {
	nodes []trieNode
}

type trieNode struct {
	next map[byte]int32
	tok  int32 // -1: no pattern ends here
}

func newTrie() trie { return trie{nodes: []trieNode{{next: map[byte]int32{}, tok: -1}}} }

func (t *trie) add(s string, tok int32) {
	n := int32(0)
	for i := 0; i < len(s); i++ {
		c, ok := t.nodes[n].next[s[i]]
		if !ok {
			c = int32(len(t.nodes))
			t.nodes = append(t.nodes, trieNode{next: map[byte]int32{}, tok: -1})
			t.nodes[n].next[s[i]] = c
		}
		n = c
	}
	if t.nodes[n].tok < 0 {
		t.nodes[n].tok = tok
	}
}

func (t *trie) find(s string, from int) (tok int32, start, end int, ok bool) {
	root := t.nodes[0].next
	if len(root) == 0 {
		return 0, 0, 0, false
	}
	for i := from; i < len(s); i++ {
		n, hit := root[s[i]]
		if !hit {
			continue
		}
		best, bestEnd := int32(-1), 0
		for j := i + 1; ; j++ {
			if t.nodes[n].tok >= 0 {
				best, bestEnd = t.nodes[n].tok, j
			}
			if j == len(s) {
				break
			}
			if n, hit = t.nodes[n].next[s[j]]; !hit {
				break
			}
		}
		if best >= 0 {
			return best, i, bestEnd, true
		}
	}
	return 0, 0, 0, false
}
