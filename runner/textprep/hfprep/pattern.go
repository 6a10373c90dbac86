package hfprep

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// Pattern is a tokenizer.json pattern ({"String": s} or {"Regex": r}); Find
// returns its non-overlapping matches as byte offsets, left to right.
type Pattern interface {
	Find(s string) [][2]int
}

// ParsePattern reads a pattern of a Replace normalizer or a Split
// pre-tokenizer.
func ParsePattern(m json.RawMessage) (Pattern, error) {
	var p struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	}
	if err := json.Unmarshal(m, &p); err != nil {
		return nil, fmt.Errorf("pattern: %w", err)
	}
	switch {
	case p.String != nil:
		return Literal(*p.String), nil
	case p.Regex != nil:
		return CompileRegex(*p.Regex)
	}
	return nil, fmt.Errorf("pattern %.80s: want String or Regex", m)
}

// Literal matches a fixed string; an empty one matches nothing, as in
// tokenizers.
type Literal string

// Find implements Pattern.
func (l Literal) Find(s string) [][2]int {
	if l == "" {
		return nil
	}
	var out [][2]int
	for i := 0; ; {
		j := strings.Index(s[i:], string(l))
		if j < 0 {
			return out
		}
		out = append(out, [2]int{i + j, i + j + len(l)})
		i += j + len(l)
	}
}

// Regex is an Oniguruma pattern (what tokenizers compiles) run by regexp2,
// a backtracking engine with the same lookahead, \p{..} classes, Unicode
// \s and leftmost-first alternation. regexp2 reports rune offsets; Find
// turns them into byte offsets.
type Regex struct {
	src string
	re  *regexp2.Regexp
}

// CompileRegex compiles a pattern's regex.
func CompileRegex(src string) (*Regex, error) {
	re, err := regexp2.Compile(src, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", src, err)
	}
	return &Regex{src: src, re: re}, nil
}

// Find implements Pattern.
func (r *Regex) Find(s string) [][2]int {
	if s == "" {
		return nil
	}
	runes := []rune(s)
	// byteAt[i] is the byte offset of rune i.
	byteAt := make([]int, len(runes)+1)
	off := 0
	for i, c := range runes {
		byteAt[i] = off
		off += utf8.RuneLen(c)
	}
	byteAt[len(runes)] = off
	var out [][2]int
	m, err := r.re.FindRunesMatch(runes)
	for ; m != nil && err == nil; m, err = r.re.FindNextMatch(m) {
		out = append(out, [2]int{byteAt[m.Index], byteAt[m.Index+m.Length]})
	}
	if err != nil {
		// Only a match timeout fails, and none is set.
		panic(fmt.Sprintf("hfprep: regex %q: %v", r.src, err))
	}
	return out
}
