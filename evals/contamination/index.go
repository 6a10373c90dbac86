package contamination

import (
	"fmt"
	"strings"
)

// Item is one test item as the scan sees it: what it is, and its text.
type Item struct {
	Test  string // "fresh" or "probes"
	ID    string
	Group string // probe type or Fresh Text source
	Text  string // probe prompt and answer; a Fresh Text document
}

// indexed is an item's normalised words.
type indexed struct {
	Item
	words  []string
	hashes []uint64
	grams  int // n-grams (or 1 for a short item matched whole)
}

// ref points at an n-gram of an item: the item and its first word.
type ref struct {
	item int32
	pos  int32
}

// Index holds the hashed n-grams of a test set.
type Index struct {
	n        int
	minWords int
	items    []indexed
	grams    map[uint64][]ref // rolling hash of n words -> where they start
	// Items shorter than n words are matched whole, by the hash of their
	// last minWords words and then word by word; they would otherwise have
	// no n-gram at all (most probe items are 7 to 12 words).
	tails map[uint64][]int32
	pow   uint64 // base^(n-1), to roll the window
	tpow  uint64 // base^(minWords-1)
	// Nearly every training n-gram is in neither map; these bit filters
	// answer that from cache before a map is asked.
	gramBits, tailBits filter
}

// filter is a one-hash bit set over the top bits of a hash.
type filter struct {
	bits  []uint64
	shift uint
}

func newFilter(keys int) filter {
	logBits := uint(16)
	for 1<<logBits < 16*keys && logBits < 30 {
		logBits++
	}
	return filter{bits: make([]uint64, 1<<(logBits-6)), shift: 64 - logBits}
}

func (f *filter) add(h uint64) {
	i := h >> f.shift
	f.bits[i>>6] |= 1 << (i & 63)
}

func (f *filter) has(h uint64) bool {
	i := h >> f.shift
	return f.bits[i>>6]&(1<<(i&63)) != 0
}

// base of the polynomial rolling hash over word hashes; odd, so multiplying
// by it is a bijection mod 2^64.
const base = 0x9E3779B97F4A7C15

// DefaultN is the n-gram length: 13 words, as the published scans use.
const DefaultN = 13

// MinWords is the shortest item that is matched at all: shorter ones
// ("Answer: 7") occur everywhere by chance.
const MinWords = 5

// NewIndex hashes every n-gram of every item. Items with fewer than
// MinWords words are left out and counted in Skipped.
func NewIndex(items []Item, n int) (*Index, error) {
	if n < MinWords {
		return nil, fmt.Errorf("n-gram length %d: want at least %d", n, MinWords)
	}
	ix := &Index{n: n, minWords: MinWords, grams: map[uint64][]ref{}, tails: map[uint64][]int32{},
		pow: power(n - 1), tpow: power(MinWords - 1)}
	seen := map[string]bool{}
	for _, it := range items {
		key := it.Test + "\x00" + it.ID
		if seen[key] {
			return nil, fmt.Errorf("%s item %q appears twice", it.Test, it.ID)
		}
		seen[key] = true
		d := indexed{Item: it}
		eachWord(it.Text, func(s span) {
			d.words = append(d.words, normalWord(it.Text[s.start:s.end]))
			d.hashes = append(d.hashes, s.hash)
		})
		id := int32(len(ix.items))
		switch {
		case len(d.words) < MinWords:
			d.grams = 0
		case len(d.words) < n:
			d.grams = 1
			h := rollAll(d.hashes[len(d.hashes)-MinWords:])
			ix.tails[h] = append(ix.tails[h], id)
		default:
			d.grams = len(d.words) - n + 1
			h := rollAll(d.hashes[:n])
			for p := 0; ; p++ {
				ix.grams[h] = append(ix.grams[h], ref{item: id, pos: int32(p)})
				if p+n >= len(d.hashes) {
					break
				}
				h = roll(h, d.hashes[p], d.hashes[p+n], ix.pow)
			}
		}
		ix.items = append(ix.items, d)
	}
	ix.gramBits, ix.tailBits = newFilter(len(ix.grams)), newFilter(len(ix.tails))
	for h := range ix.grams {
		ix.gramBits.add(h)
	}
	for h := range ix.tails {
		ix.tailBits.add(h)
	}
	return ix, nil
}

func power(k int) uint64 {
	p := uint64(1)
	for range k {
		p *= base
	}
	return p
}

// rollAll hashes a window of word hashes: sum of w[i]*base^(len-1-i).
func rollAll(ws []uint64) uint64 {
	var h uint64
	for _, w := range ws {
		h = h*base + w
	}
	return h
}

// roll drops out and appends in: the window moves one word on.
func roll(h, out, in, pow uint64) uint64 { return (h-out*pow)*base + in }

// N is the n-gram length.
func (ix *Index) N() int { return ix.n }

// Len is the number of items indexed.
func (ix *Index) Len() int { return len(ix.items) }

// Skipped lists the items too short to be matched.
func (ix *Index) Skipped() []string {
	var out []string
	for _, d := range ix.items {
		if d.grams == 0 {
			out = append(out, d.Test+":"+d.ID)
		}
	}
	return out
}

// sameWords reports whether the item's words from pos equal the training
// words ws (already normalised): hash hits are checked word for word, so
// a hash collision can never flag an item.
func (d *indexed) sameWords(pos int, ws []string) bool {
	if pos+len(ws) > len(d.words) {
		return false
	}
	for i, w := range ws {
		if d.words[pos+i] != w {
			return false
		}
	}
	return true
}

func (d *indexed) String() string { return d.Test + " " + d.ID + ": " + strings.Join(d.words, " ") }
