package hfprep

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/udgamlabs/udgam-ci/internal/tokjson"
)

// Normalizer is one of tokenizer.json's normalizers. first says whether s
// starts at the text's first character; the result says whether the
// normalized string still does (Strip can move it), which a Metaspace
// pre-tokenizer with prepend_scheme "first" reads.
type Normalizer interface {
	Normalize(s string, first bool) (string, bool)
}

// ParseNormalizer reads a tokenizer.json normalizer: nil for none, an
// error naming a type not implemented.
func ParseNormalizer(m json.RawMessage) (Normalizer, error) {
	if tokjson.IsNull(m) {
		return nil, nil
	}
	typ, err := tokjson.TypeOf(m)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "NFC":
		return unicodeForm{norm.NFC}, nil
	case "NFD":
		return unicodeForm{norm.NFD}, nil
	case "NFKC":
		return unicodeForm{norm.NFKC}, nil
	case "NFKD":
		return unicodeForm{norm.NFKD}, nil
	case "Lowercase":
		return lowercase{}, nil
	case "StripAccents":
		return stripAccents{}, nil
	case "Prepend":
		var p struct {
			Prepend string `json:"prepend"`
		}
		if err := json.Unmarshal(m, &p); err != nil {
			return nil, fmt.Errorf("Prepend: %w", err)
		}
		return prepend(p.Prepend), nil
	case "Strip":
		var p struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}
		if err := json.Unmarshal(m, &p); err != nil {
			return nil, fmt.Errorf("Strip: %w", err)
		}
		return strip{left: p.Left, right: p.Right}, nil
	case "Replace":
		var p struct {
			Pattern json.RawMessage `json:"pattern"`
			Content string          `json:"content"`
		}
		if err := json.Unmarshal(m, &p); err != nil {
			return nil, fmt.Errorf("Replace: %w", err)
		}
		pat, err := ParsePattern(p.Pattern)
		if err != nil {
			return nil, fmt.Errorf("Replace: %w", err)
		}
		return replace{pat: pat, content: p.Content}, nil
	case "BertNormalizer":
		var p struct {
			CleanText    bool  `json:"clean_text"`
			ChineseChars bool  `json:"handle_chinese_chars"`
			StripAccents *bool `json:"strip_accents"`
			Lowercase    bool  `json:"lowercase"`
		}
		if err := json.Unmarshal(m, &p); err != nil {
			return nil, fmt.Errorf("BertNormalizer: %w", err)
		}
		b := bert{clean: p.CleanText, chinese: p.ChineseChars, lower: p.Lowercase, strip: p.Lowercase}
		if p.StripAccents != nil {
			b.strip = *p.StripAccents
		}
		return b, nil
	case "Sequence":
		seq, err := tokjson.ParseSequence(m, "normalizers", ParseNormalizer)
		return sequenceNorm(seq), err
	}
	return nil, fmt.Errorf("type %q is not implemented", typ)
}

type unicodeForm struct{ f norm.Form }

func (u unicodeForm) Normalize(s string, first bool) (string, bool) { return u.f.String(s), first }

// lowercase maps each character as Rust's char::to_lowercase: one rune to
// one, except U+0130, whose lowercase is two.
type lowercase struct{}

func (lowercase) Normalize(s string, first bool) (string, bool) {
	return strings.Map(unicode.ToLower, strings.ReplaceAll(s, "\u0130", "i\u0307")), first
}

// stripAccents drops combining marks (general category M), as tokenizers'
// StripAccents; it is meant to follow NFD or NFKD.
type stripAccents struct{}

func (stripAccents) Normalize(s string, first bool) (string, bool) {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.M, r) {
			return -1
		}
		return r
	}, s), first
}

// prepend adds its string in front of a non-empty segment.
type prepend string

func (p prepend) Normalize(s string, first bool) (string, bool) {
	if s == "" {
		return s, first
	}
	return string(p) + s, first
}

type strip struct{ left, right bool }

func (p strip) Normalize(s string, first bool) (string, bool) {
	if p.left {
		t := strings.TrimLeftFunc(s, IsSpace)
		if len(t) != len(s) {
			first = false
		}
		s = t
	}
	if p.right {
		s = strings.TrimRightFunc(s, IsSpace)
	}
	return s, first
}

type replace struct {
	pat     Pattern
	content string
}

func (p replace) Normalize(s string, first bool) (string, bool) {
	var b strings.Builder
	prev := 0
	for _, m := range p.pat.Find(s) {
		if m[0] == 0 && m[1] > 0 && p.content == "" {
			first = false
		}
		b.WriteString(s[prev:m[0]])
		b.WriteString(p.content)
		prev = m[1]
	}
	b.WriteString(s[prev:])
	return b.String(), first
}

// bert is tokenizers' BertNormalizer: clean_text drops NUL, U+FFFD and
// other control characters and maps whitespace to spaces;
// handle_chinese_chars puts spaces around CJK ideographs; strip_accents
// (by default as lowercase) is NFD then dropping nonspacing marks.
type bert struct{ clean, chinese, strip, lower bool }

func (p bert) Normalize(s string, first bool) (string, bool) {
	if p.clean {
		s = strings.Map(func(r rune) rune {
			switch {
			case r == '\t' || r == '\n' || r == '\r':
				return ' '
			case r == 0 || r == 0xfffd || unicode.Is(unicode.C, r) || !unicode.In(r, assigned...):
				return -1
			case IsSpace(r):
				return ' '
			}
			return r
		}, s)
	}
	if p.chinese {
		var b strings.Builder
		for _, r := range s {
			if isCJKIdeograph(r) {
				b.WriteByte(' ')
				b.WriteRune(r)
				b.WriteByte(' ')
			} else {
				b.WriteRune(r)
			}
		}
		s = b.String()
	}
	if p.strip {
		s = strings.Map(func(r rune) rune {
			if unicode.Is(unicode.Mn, r) {
				return -1
			}
			return r
		}, norm.NFD.String(s))
	}
	if p.lower {
		s, _ = lowercase{}.Normalize(s, first)
	}
	return s, first
}

// assigned lists the general categories other than C: a rune in none of
// them is unassigned (Cn), which BertNormalizer's clean_text drops too.
var assigned = []*unicode.RangeTable{unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z}

func isCJKIdeograph(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) || (r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

type sequenceNorm []Normalizer

func (q sequenceNorm) Normalize(s string, first bool) (string, bool) {
	for _, n := range q {
		s, first = n.Normalize(s, first)
	}
	return s, first
}
