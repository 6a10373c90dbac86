// Package contamination finds which test items a model's training data
// already contains: every n-gram of words of every test item is hashed into
// an in-memory index, then the training text is streamed once and each of
// its n-grams is looked up with a rolling hash. Memory is bounded by the
// test set, whatever the size of the training data.
//
// Both sides are normalised the same way (see Words): text is lower-cased
// and split into words, so case, whitespace and punctuation changes do not
// hide a copy. Paraphrases and translations are not found.
package contamination

import (
	"unicode"
	"unicode/utf8"
)

// A word is a maximal run of letters, digits and combining marks (Unicode
// categories L, N and M), lower-cased rune by rune with Unicode's simple
// case mapping. Everything else (spaces, punctuation, symbols, emoji, and
// bytes that are not UTF-8) separates words and is dropped. Scripts written
// without spaces between words (Han, Hiragana, Katakana, Thai, Lao, Khmer,
// Myanmar; Hangul is not one of them) have no word boundaries to find, so
// each of their letters is a word of its own, with the combining marks
// (vowel signs, tone marks) that follow it; their digits group into
// numbers as all digits do, and their punctuation separates. So a copied
// Chinese, Japanese or Thai sentence still yields n-grams.
//
// Numbers split at their commas and points ("10,000" is "10" "000"), the
// same on both sides.

// span is one word of a text: its byte range in the original and the hash
// of its normalised form.
type span struct {
	start, end int
	hash       uint64
}

// wordHasher hashes normalised words: FNV-1a over the lower-cased UTF-8
// bytes, finished with a 64-bit mixer so that rolling sums of word hashes
// spread over the whole range.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// isolated reports whether the letter r belongs to a script written without
// spaces: each such letter starts a word of its own.
func isolated(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}

// asciiClass is 0 for separators, 1 for word bytes (already lower case
// after asciiLower).
var asciiClass = func() (c [128]byte) {
	for b := 0; b < 128; b++ {
		if 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' {
			c[b] = 1
		}
	}
	return c
}()

// eachWord calls fn for every word of text in order and returns how many
// bytes of text are not UTF-8 (each separates words, as U+FFFD would). It is
// the one place that says what a word is; both the index and the scan use it.
func eachWord(text string, fn func(span)) (invalid int) {
	start := -1
	single := false // the word is one isolated letter: only marks may follow
	var h uint64
	flush := func(end int) {
		if start >= 0 {
			fn(span{start: start, end: end, hash: mix(h)})
			start, single = -1, false
		}
	}
	for i := 0; i < len(text); {
		b := text[i]
		if b < utf8.RuneSelf {
			if asciiClass[b] == 0 {
				flush(i)
				i++
				continue
			}
			if single {
				flush(i)
			}
			if start < 0 {
				start, h = i, fnvOffset
			}
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			h = (h ^ uint64(b)) * fnvPrime
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			invalid++
			flush(i)
		case unicode.IsMark(r): // attaches to the word before, isolated letters' too
			if start < 0 {
				start, h = i, fnvOffset
			}
			h = hashRune(h, unicode.ToLower(r))
		case unicode.IsLetter(r) && isolated(r):
			flush(i)
			start, h, single = i, fnvOffset, true
			h = hashRune(h, unicode.ToLower(r))
		case unicode.IsLetter(r) || unicode.IsNumber(r):
			if single {
				flush(i)
			}
			if start < 0 {
				start, h = i, fnvOffset
			}
			h = hashRune(h, unicode.ToLower(r))
		default:
			flush(i)
		}
		i += size
	}
	flush(len(text))
	return invalid
}

func hashRune(h uint64, r rune) uint64 {
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	for _, b := range buf[:n] {
		h = (h ^ uint64(b)) * fnvPrime
	}
	return h
}

// Words returns text's normalised words, for tests, reports and the
// brute-force check.
func Words(text string) []string {
	var out []string
	eachWord(text, func(s span) { out = append(out, normalWord(text[s.start:s.end])) })
	return out
}

// normalWord lower-cases one word as eachWord hashes it.
func normalWord(w string) string {
	b := make([]byte, 0, len(w))
	for _, r := range w {
		b = utf8.AppendRune(b, unicode.ToLower(r))
	}
	return string(b)
}
