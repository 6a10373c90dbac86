package contamination

import (
	"cmp"
	"slices"
	"strings"
)

// Location is where a match was first seen in the training data.
type Location struct {
	File string `json:"file"`
	// Line (JSON Lines and plain text, from 1) or Row (Parquet, from 1).
	Line int `json:"line,omitempty"`
	Row  int `json:"row,omitempty"`
	// Offset is the byte offset of the first matching word in the record's
	// text (JSON Lines, Parquet) or in its line (plain text).
	Offset int    `json:"offset"`
	Text   string `json:"text"` // the matching training text
	// Order is (input file index, record, offset) over the whole, unsharded
	// input list: what "first" means, also across merged shards.
	Order [3]int `json:"order"`
}

func (l *Location) before(o *Location) bool {
	return slices.Compare(l.Order[:], o.Order[:]) < 0
}

// hit is what one scan found for one item.
type hit struct {
	positions map[int32]bool // n-gram positions found (0 for a whole short item)
	first     Location
}

// matcher scans training text against an index. Each goroutine has its own;
// their hits are merged afterwards.
type matcher struct {
	ix   *Index
	ring []ringWord // the last n words, ring[k%n]
	k    int        // words seen in the current document
	h    uint64     // rolling hash of the last n words
	th   uint64     // rolling hash of the last MinWords words
	hits map[int32]*hit

	words int64 // training words scanned
	bytes int64 // training text bytes scanned
	// invalid counts bytes that are not UTF-8, invalidAt the first record
	// (line or row) holding one.
	invalid   int64
	invalidAt int

	piece int // counts scan calls: which words share the text being scanned
}

type ringWord struct {
	word   string // as in the training text, not normalised
	hash   uint64
	line   int
	offset int // in the record's text (or the line's)
	piece  int // the scan call that saw it
}

// source says where the text being scanned comes from.
type source struct {
	file      string
	fileIndex int
	rows      bool // Parquet: records are rows
}

func newMatcher(ix *Index) *matcher {
	return &matcher{ix: ix, ring: make([]ringWord, ix.n), hits: map[int32]*hit{}}
}

// reset starts a new document: n-grams never span two records.
func (m *matcher) reset() { m.k, m.h, m.th = 0, 0, 0 }

// scan feeds one record's (or one line's) text, or a piece of it that
// starts at byte from of the record. Words continue the current document
// until reset.
func (m *matcher) scan(src *source, record int, text string, from int) {
	m.bytes += int64(len(text))
	m.piece++
	n, t := m.ix.n, m.ix.minWords
	bad := eachWord(text, func(s span) {
		m.words++
		if m.k >= n {
			m.h = roll(m.h, m.ring[m.k%n].hash, s.hash, m.ix.pow)
		} else {
			m.h = m.h*base + s.hash
		}
		if m.k >= t {
			m.th = roll(m.th, m.ring[(m.k-t)%n].hash, s.hash, m.ix.tpow)
		} else {
			m.th = m.th*base + s.hash
		}
		m.ring[m.k%n] = ringWord{word: text[s.start:s.end], hash: s.hash, line: record, offset: from + s.start, piece: m.piece}
		m.k++
		if m.k >= n && m.ix.gramBits.has(m.h) {
			if refs, ok := m.ix.grams[m.h]; ok {
				m.check(src, refs, text, from)
			}
		}
		if m.k >= t && m.ix.tailBits.has(m.th) {
			if ids, ok := m.ix.tails[m.th]; ok {
				m.checkShort(src, ids, text, from)
			}
		}
	})
	if bad > 0 {
		if m.invalid == 0 {
			m.invalidAt = record
		}
		m.invalid += int64(bad)
	}
}

// detach copies the words the ring keeps out of the text just scanned, so
// that a record streamed in pieces holds no more than its last n words of
// the earlier pieces.
func (m *matcher) detach() {
	for i := range m.ring {
		m.ring[i].word = strings.Clone(m.ring[i].word)
	}
}

// window returns the last w words, normalised, and the first of them.
func (m *matcher) window(w int) ([]string, ringWord) {
	ws := make([]string, w)
	for i := range w {
		ws[i] = normalWord(m.ring[(m.k-w+i)%m.ix.n].word)
	}
	return ws, m.ring[(m.k-w)%m.ix.n]
}

func (m *matcher) check(src *source, refs []ref, text string, from int) {
	ws, first := m.window(m.ix.n)
	for _, r := range refs {
		d := &m.ix.items[r.item]
		if d.sameWords(int(r.pos), ws) {
			m.record(src, r.item, r.pos, first, m.ix.n, text, from)
		}
	}
}

func (m *matcher) checkShort(src *source, ids []int32, text string, from int) {
	for _, id := range ids {
		d := &m.ix.items[id]
		w := len(d.words)
		if w > m.k {
			continue
		}
		ws, first := m.window(w)
		if d.sameWords(0, ws) {
			m.record(src, id, 0, first, w, text, from)
		}
	}
}

// maxSnippet bounds the matching text kept in a report.
const maxSnippet = 400

func (m *matcher) record(src *source, item, pos int32, first ringWord, w int, text string, from int) {
	loc := Location{File: src.file, Offset: first.offset, Order: [3]int{src.fileIndex, first.line, first.offset}}
	if src.rows {
		loc.Row = first.line
	} else {
		loc.Line = first.line
	}
	h := m.hits[item]
	if h != nil && !loc.before(&h.first) {
		h.positions[pos] = true
		return
	}
	last := m.ring[(m.k-1)%m.ix.n]
	if first.piece == m.piece {
		loc.Text = text[first.offset-from : last.offset-from+len(last.word)]
	} else { // a plain-text match across lines, or across pieces of a record
		ws := make([]string, w)
		for i := range w {
			ws[i] = m.ring[(m.k-w+i)%m.ix.n].word
		}
		loc.Text = strings.Join(ws, " ")
	}
	if len(loc.Text) > maxSnippet {
		loc.Text = strings.ToValidUTF8(loc.Text[:maxSnippet], "") + "…"
	}
	loc.Text = strings.Clone(loc.Text) // the text may be a view into a reused buffer
	if h == nil {
		h = &hit{positions: map[int32]bool{}}
		m.hits[item] = h
	}
	h.positions[pos] = true
	h.first = loc
}

// mergeHits adds b's hits into a.
func mergeHits(a, b map[int32]*hit) {
	for id, hb := range b {
		ha := a[id]
		if ha == nil {
			a[id] = hb
			continue
		}
		for p := range hb.positions {
			ha.positions[p] = true
		}
		if hb.first.before(&ha.first) {
			ha.first = hb.first
		}
	}
}

func sortedPositions(p map[int32]bool) []int32 {
	out := make([]int32, 0, len(p))
	for k := range p {
		out = append(out, k)
	}
	slices.SortFunc(out, cmp.Compare)
	return out
}
