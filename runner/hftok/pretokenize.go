package hftok

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/udgamlabs/udgam-ci/internal/tokjson"
	"github.com/udgamlabs/udgam-ci/runner/textprep/hfprep"
)

// piece is one pre-token: its text and whether it starts the whole text.
type piece struct {
	s     string
	first bool
}

type preTokenizer interface {
	preTokenize([]piece) []piece
}

func parsePreTokenizer(m json.RawMessage) (preTokenizer, error) {
	if tokjson.IsNull(m) {
		return nil, nil
	}
	typ, err := tokjson.TypeOf(m)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "ByteLevel":
		var p struct {
			AddPrefixSpace bool  `json:"add_prefix_space"`
			UseRegex       *bool `json:"use_regex"`
		}
		if err := json.Unmarshal(m, &p); err != nil {
			return nil, fmt.Errorf("ByteLevel: %w", err)
		}
		b := byteLevel{prefixSpace: p.AddPrefixSpace, useRegex: p.UseRegex == nil || *p.UseRegex}
		if b.useRegex {
			if b.re, err = hfprep.CompileRegex(gpt2Pattern); err != nil {
				return nil, err
			}
		}
		return b, nil
	case "Split":
		var p struct {
			Pattern  json.RawMessage `json:"pattern"`
			Behavior string          `json:"behavior"`
			Invert   bool            `json:"invert"`
		}
		if err := json.Unmarshal(m, &p); err != nil {
			return nil, fmt.Errorf("Split: %w", err)
		}
		pat, err := hfprep.ParsePattern(p.Pattern)
		if err != nil {
			return nil, fmt.Errorf("Split: %w", err)
		}
		b, err := parseBehavior(p.Behavior)
		if err != nil {
			return nil, fmt.Errorf("Split: %w", err)
		}
		return splitter{pat: pat, behavior: b, invert: p.Invert}, nil
	case "Digits":
		var p struct {
			Individual bool `json:"individual_digits"`
		}
		if err := json.Unmarshal(m, &p); err != nil {
			return nil, fmt.Errorf("Digits: %w", err)
		}
		b := contiguous
		if p.Individual {
			b = isolated
		}
		return splitter{pat: charPattern(unicode.IsNumber), behavior: b}, nil
	case "Punctuation":
		var p struct {
			Behavior string `json:"behavior"`
		}
		if err := json.Unmarshal(m, &p); err != nil {
			return nil, fmt.Errorf("Punctuation: %w", err)
		}
		b := isolated
		if p.Behavior != "" {
			if b, err = parseBehavior(p.Behavior); err != nil {
				return nil, fmt.Errorf("Punctuation: %w", err)
			}
		}
		return splitter{pat: charPattern(isPunct), behavior: b}, nil
	case "Whitespace":
		return whitespace{}, nil
	case "WhitespaceSplit":
		return splitter{pat: charPattern(hfprep.IsSpace), behavior: removed}, nil
	case "BertPreTokenizer":
		return sequencePre{
			splitter{pat: charPattern(hfprep.IsSpace), behavior: removed},
			splitter{pat: charPattern(isPunct), behavior: isolated},
		}, nil
	case "CharDelimiterSplit":
		var p struct {
			Delimiter string `json:"delimiter"`
		}
		if err := json.Unmarshal(m, &p); err != nil {
			return nil, fmt.Errorf("CharDelimiterSplit: %w", err)
		}
		if utf8.RuneCountInString(p.Delimiter) != 1 {
			return nil, fmt.Errorf("CharDelimiterSplit: delimiter %q is not one character", p.Delimiter)
		}
		d, _ := utf8.DecodeRuneInString(p.Delimiter)
		return splitter{pat: charPattern(func(r rune) bool { return r == d }), behavior: removed}, nil
	case "Metaspace":
		return parseMetaspace(m)
	case "Sequence":
		seq, err := tokjson.ParseSequence(m, "pretokenizers", parsePreTokenizer)
		return sequencePre(seq), err
	}
	return nil, fmt.Errorf("type %q is not implemented", typ)
}

type sequencePre []preTokenizer

func (q sequencePre) preTokenize(ps []piece) []piece {
	for _, p := range q {
		ps = p.preTokenize(ps)
	}
	return ps
}

// behavior is tokenizers' SplitDelimiterBehavior: what becomes of a match.
type behavior int

const (
	removed            behavior = iota // dropped
	isolated                           // a piece of its own
	mergedWithPrevious                 // joined to the piece before it
	mergedWithNext                     // joined to the piece after it
	contiguous                         // consecutive matches make one piece
)

func parseBehavior(s string) (behavior, error) {
	switch s {
	case "Removed":
		return removed, nil
	case "Isolated":
		return isolated, nil
	case "MergedWithPrevious":
		return mergedWithPrevious, nil
	case "MergedWithNext":
		return mergedWithNext, nil
	case "Contiguous":
		return contiguous, nil
	}
	return 0, fmt.Errorf("behavior %q is not implemented", s)
}

type span struct {
	start, end int
	match      bool
}

// spans covers s with the matches and the text between them.
func spans(s string, matches [][2]int, invert bool) []span {
	var out []span
	prev := 0
	for _, m := range matches {
		if prev < m[0] {
			out = append(out, span{prev, m[0], invert})
		}
		out = append(out, span{m[0], m[1], !invert})
		prev = m[1]
	}
	if prev < len(s) {
		out = append(out, span{prev, len(s), invert})
	}
	return out
}

// splitSpans is tokenizers' NormalizedString::split: it returns the
// [start, end) ranges to keep. Empty ranges are kept here and dropped by
// the caller, as PreTokenizedString::split drops empty splits.
func splitSpans(sp []span, b behavior) [][2]int {
	var out [][2]int
	switch b {
	case removed:
		for _, s := range sp {
			if !s.match {
				out = append(out, [2]int{s.start, s.end})
			}
		}
	case isolated:
		for _, s := range sp {
			out = append(out, [2]int{s.start, s.end})
		}
	case contiguous:
		prevMatch := false
		for i, s := range sp {
			if i > 0 && s.match == prevMatch {
				out[len(out)-1][1] = s.end
			} else {
				out = append(out, [2]int{s.start, s.end})
			}
			prevMatch = s.match
		}
	case mergedWithPrevious:
		prevMatch := false
		for i, s := range sp {
			if i > 0 && s.match && !prevMatch {
				out[len(out)-1][1] = s.end
			} else {
				out = append(out, [2]int{s.start, s.end})
			}
			prevMatch = s.match
		}
	case mergedWithNext:
		prevMatch := false
		for i := len(sp) - 1; i >= 0; i-- {
			s := sp[i]
			if i < len(sp)-1 && s.match && !prevMatch {
				out[len(out)-1][0] = s.start
			} else {
				out = append(out, [2]int{s.start, s.end})
			}
			prevMatch = s.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// splitPieces splits every piece on pat with behavior b.
func splitPieces(ps []piece, pat hfprep.Pattern, b behavior, invert bool) []piece {
	var out []piece
	for _, p := range ps {
		for _, r := range splitSpans(spans(p.s, pat.Find(p.s), invert), b) {
			if r[0] < r[1] {
				out = append(out, piece{s: p.s[r[0]:r[1]], first: p.first && r[0] == 0})
			}
		}
	}
	return out
}

type splitter struct {
	pat      hfprep.Pattern
	behavior behavior
	invert   bool
}

func (p splitter) preTokenize(ps []piece) []piece {
	return splitPieces(ps, p.pat, p.behavior, p.invert)
}

// charPattern matches every character for which it is true, each one a
// match of its own (tokenizers' Pattern for a char predicate).
type charPattern func(rune) bool

func (f charPattern) Find(s string) [][2]int {
	var out [][2]int
	for i, r := range s {
		if f(r) {
			out = append(out, [2]int{i, i + utf8.RuneLen(r)})
		}
	}
	return out
}

// isPunct is tokenizers' is_punc: ASCII punctuation (symbols included) or
// a Unicode punctuation category.
func isPunct(r rune) bool {
	return (r < 0x80 && strings.ContainsRune("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", r)) || unicode.IsPunct(r)
}

// whitespace is tokenizers' Whitespace pre-tokenizer, the pieces of
// `\w+|[^\w\s]+`: runs of word characters and runs of other non-space
// characters; whitespace is dropped.
type whitespace struct{}

func (whitespace) preTokenize(ps []piece) []piece {
	var out []piece
	for _, p := range ps {
		class := func(r rune) int {
			switch {
			case hfprep.IsWordChar(r):
				return 1
			case hfprep.IsSpace(r):
				return 0
			}
			return 2
		}
		start, cur := 0, 0
		for i, r := range p.s {
			c := class(r)
			if c != cur {
				if cur != 0 {
					out = append(out, piece{s: p.s[start:i], first: p.first && start == 0})
				}
				start, cur = i, c
			}
		}
		if cur != 0 {
			out = append(out, piece{s: p.s[start:], first: p.first && start == 0})
		}
	}
	return out
}

// gpt2Pattern is the ByteLevel pre-tokenizer's regex (GPT-2's).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// byteLevel is tokenizers' ByteLevel pre-tokenizer: an optional leading
// space on every piece, GPT-2's regex split, then every byte mapped to its
// printable stand-in (bytesToUnicode).
type byteLevel struct {
	prefixSpace, useRegex bool
	re                    *hfprep.Regex
}

func (b byteLevel) preTokenize(ps []piece) []piece {
	if b.prefixSpace {
		for i := range ps {
			if !strings.HasPrefix(ps[i].s, " ") {
				ps[i].s = " " + ps[i].s
			}
		}
	}
	if b.useRegex {
		ps = splitPieces(ps, b.re, isolated, false)
	}
	for i := range ps {
		ps[i].s = byteLevelString(ps[i].s)
	}
	return ps
}

// byteToRune is GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for
// themselves, the other 68 map to U+0100 on, in byte order.
var byteToRune = func() [256]rune {
	var t [256]rune
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			t[b] = rune(b)
		} else {
			t[b] = 256 + n
			n++
		}
	}
	return t
}()

func byteLevelString(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteToRune[s[i]])
	}
	return b.String()
}

// metaspace is tokenizers' Metaspace: spaces become the replacement
// character, which is prepended by prepend_scheme, and pieces split before
// each replacement character.
type metaspace struct {
	replacement string
	prepend     string // "always", "first" or "never"
	split       bool
}

func parseMetaspace(m json.RawMessage) (preTokenizer, error) {
	var p struct {
		Replacement    string `json:"replacement"`
		PrependScheme  string `json:"prepend_scheme"`
		AddPrefixSpace *bool  `json:"add_prefix_space"`
		Split          *bool  `json:"split"`
	}
	if err := json.Unmarshal(m, &p); err != nil {
		return nil, fmt.Errorf("Metaspace: %w", err)
	}
	if utf8.RuneCountInString(p.Replacement) != 1 {
		return nil, fmt.Errorf("Metaspace: replacement %q is not one character", p.Replacement)
	}
	ms := metaspace{replacement: p.Replacement, prepend: p.PrependScheme, split: p.Split == nil || *p.Split}
	if ms.prepend == "" {
		ms.prepend = "always" // tokenizers' default
	}
	if p.AddPrefixSpace != nil && !*p.AddPrefixSpace { // files older than prepend_scheme
		if p.PrependScheme != "" && p.PrependScheme != "never" {
			return nil, fmt.Errorf("Metaspace: add_prefix_space false does not match prepend_scheme %q", p.PrependScheme)
		}
		ms.prepend = "never"
	}
	switch ms.prepend {
	case "always", "first", "never":
	default:
		return nil, fmt.Errorf("Metaspace: prepend_scheme %q is not implemented", ms.prepend)
	}
	return ms, nil
}

func (ms metaspace) preTokenize(ps []piece) []piece {
	for i := range ps {
		s := strings.ReplaceAll(ps[i].s, " ", ms.replacement)
		if !strings.HasPrefix(s, ms.replacement) &&
			(ms.prepend == "always" || (ms.prepend == "first" && ps[i].first)) {
			s = ms.replacement + s
		}
		ps[i].s = s
	}
	if ms.split {
		ps = splitPieces(ps, hfprep.Literal(ms.replacement), mergedWithNext, false)
	}
	return ps
}
