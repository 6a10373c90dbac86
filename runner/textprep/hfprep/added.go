package hfprep

import (
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/udgamlabs/udgam-ci/internal/tokjson"
)

// Segment is one part of a text after added-token splitting: an added token
// (Added, with its ID; Text is what it matched, with any whitespace its
// lstrip/rstrip took) or text for the normalizer, pre-tokenizer and model.
// First says whether the segment starts the whole text (a Metaspace
// pre-tokenizer with prepend_scheme "first" reads it).
type Segment struct {
	Text  string
	ID    int32
	Added bool
	First bool
}

// addedVocab matches added tokens in text: raw holds the tokens with
// normalized=false (matched on raw text), norm those with normalized=true
// (matched, by their normalized content, on normalized text).
type addedVocab struct {
	tokens    []tokjson.AddedToken
	raw, norm trie
}

// newAddedVocab takes the added tokens' ids as given: whoever calls it
// checked them (the converter against the vocabulary it writes, runner/hftok
// against the model it reads).
func newAddedVocab(tokens []tokjson.AddedToken, n Normalizer) (*addedVocab, error) {
	v := &addedVocab{raw: newTrie(), norm: newTrie()}
	seen := map[string]int{}
	for _, a := range tokens {
		if a.Content == "" {
			continue // Hugging Face ignores empty added tokens
		}
		if id, dup := seen[a.Content]; dup {
			return nil, fmt.Errorf("%q is listed twice (ids %d and %d): not implemented", a.Content, id, a.ID)
		}
		seen[a.Content] = a.ID
		if a.ID < 0 || a.ID > math.MaxInt32 {
			return nil, fmt.Errorf("added token %q has id %d, outside the ids a vocabulary can have", a.Content, a.ID)
		}
		i := int32(len(v.tokens))
		v.tokens = append(v.tokens, a)
		if !a.Normalized {
			v.raw.add(a.Content, i)
			continue
		}
		pattern := a.Content
		if n != nil {
			pattern, _ = n.Normalize(a.Content, true)
		}
		if pattern != "" {
			v.norm.add(pattern, i)
		}
	}
	return v, nil
}

// split mirrors tokenizers' AddedVocabulary::find_matches: leftmost-longest
// matches scanned left to right (a discarded match is skipped, not
// rescanned), single_word checked on the text around the match, lstrip and
// rstrip widening the match over whitespace. first says whether text
// starts the whole text; the segment at offset 0 keeps it.
func (v *addedVocab) split(text string, first, normalized bool) []Segment {
	tr := &v.raw
	if normalized {
		tr = &v.norm
	}
	var out []Segment
	push := func(start, stop int, tok *tokjson.AddedToken) {
		s := Segment{Text: text[start:stop], First: first && start == 0}
		if tok != nil {
			s.ID, s.Added = int32(tok.ID), true
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
			start = max(len(strings.TrimRightFunc(text[:start], IsSpace)), done)
		}
		if tok.RStrip {
			stop = len(text) - len(strings.TrimLeftFunc(text[stop:], IsSpace))
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

// IsSpace is Unicode White_Space, as Rust's char::is_whitespace and its
// regex \s.
func IsSpace(r rune) bool { return unicode.Is(unicode.White_Space, r) }

// IsWordChar is Rust regex's Unicode \w: Alphabetic, marks, decimal
// digits, connector punctuation and joiners.
func IsWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r) ||
		unicode.Is(unicode.M, r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r) ||
		unicode.Is(unicode.Join_Control, r)
}

func endsWithWord(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && IsWordChar(r)
}

func startsWithWord(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && IsWordChar(r)
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
