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
// case mapping. Everything else (spaces, punctuation, symbols, emoji)
// separates words and is dropped. Letters of scripts written without
// spaces between words (Han, Hiragana, Katakana, Hangul is not one of
// them, Thai, Lao, Khmer, Myanmar) are each a word of their own, so that a
// copied Chinese or Japanese sentence still yields n-grams.
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

// isolated reports whether r is a letter of a script written without spaces,
// each of which is a word on its own.
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

// eachWord calls fn for every word of text in order. It is the one place
// that says what a word is; both the index and the scan use it.
func eachWord(text string, fn func(span)) {
	start := -1
	var h uint64
	flush := func(end int) {
		if start >= 0 {
			fn(span{start: start, end: end, hash: mix(h)})
			start = -1
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
		case isolated(r):
			flush(i)
			start, h = i, fnvOffset
			h = hashRune(h, unicode.ToLower(r))
			flush(i + size)
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r) || unicode.IsMark(r):
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
