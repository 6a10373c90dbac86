package runfile

import (
	"fmt"
	"strconv"
	"strings"
)

// Span is one window's scored span of a document: how many tokens it
// scores and their bits. Every token of a document is scored in exactly
// one window, so a document's spans partition its tokens and bits, and
// spans, about a stride of tokens each, are units small and alike in
// size for a sequential run to sample.
type Span struct {
	Tokens int     `json:"tokens"`
	Bits   float64 `json:"bits"`
}

// SpanID is the id of span k (from 1) of document doc.
func SpanID(doc string, k int) string { return doc + "#" + strconv.Itoa(k) }

// ParseSpanID splits a span's id into its document and index.
func ParseSpanID(id string) (doc string, k int, ok bool) {
	i := strings.LastIndexByte(id, '#')
	if i < 0 {
		return "", 0, false
	}
	k, err := strconv.Atoi(id[i+1:])
	return id[:i], k, err == nil && k >= 1
}

// SpanBytes shares a document's bytes among its spans by their tokens,
// in whole bytes that add up to bytes: span k gets the bytes between
// ⌊bytes·T(k−1)/T⌋ and ⌊bytes·T(k)/T⌋, T(k) the tokens of the first k.
// Both runs of a comparison share them, since both tokenize alike.
func SpanBytes(bytes int, spans []Span) []int {
	total := 0
	for _, s := range spans {
		total += s.Tokens
	}
	out := make([]int, len(spans))
	if total == 0 {
		return out
	}
	cum, prev := 0, 0
	for k, s := range spans {
		cum += s.Tokens
		at := int(int64(bytes) * int64(cum) / int64(total))
		out[k] = at - prev
		prev = at
	}
	return out
}

// SplitSpans is a whole document's span records, as a sequential run over
// spans writes them; nil when the document has no spans recorded.
func SplitSpans(d *Doc) []Doc {
	if len(d.Spans) == 0 {
		return nil
	}
	bytes := SpanBytes(d.Bytes, d.Spans)
	out := make([]Doc, len(d.Spans))
	for k, s := range d.Spans {
		out[k] = Doc{ID: SpanID(d.ID, k+1), Source: d.Source, Bytes: bytes[k], Tokens: s.Tokens, Bits: s.Bits, Windows: 1,
			FirstUnscored: d.FirstUnscored, TextBytes: d.TextBytes, Of: d.ID, Span: k + 1, OfSpans: len(d.Spans)}
	}
	return out
}

// SpanBits is a document's bits from its spans' bits: their sum in span
// order, the one way the scorer and JoinSpans add them, so a document put
// together from its span records equals the whole record to the bit.
func SpanBits(spans []Span) float64 {
	bits := 0.0
	for _, s := range spans {
		bits += s.Bits
	}
	return bits
}

// JoinSpans replaces the span records of every document whose spans are
// all there with the whole document's record (at the place of its first
// span), which equals the record a run of whole documents writes; span
// records of documents scored in part, and whole records, stay as they
// are.
func JoinSpans(docs []Doc) []Doc {
	have, of := map[string]int{}, map[string]int{}
	for i := range docs {
		d := &docs[i]
		if d.Of == "" {
			have[d.ID] = -1 << 30 // a whole record of it is there already
			continue
		}
		have[d.Of]++
		if n, ok := of[d.Of]; ok && n != d.OfSpans {
			have[d.Of] = -1 << 30 // its records disagree on how many spans it has: never joined
		}
		of[d.Of] = d.OfSpans
	}
	if len(have) == 0 {
		return docs
	}
	parts := map[string][]*Doc{}
	at := map[int]string{} // out's places that take a whole document
	var out []Doc
	for i := range docs {
		d := &docs[i]
		if d.Of == "" || have[d.Of] != d.OfSpans {
			out = append(out, *d)
			continue
		}
		if parts[d.Of] == nil {
			parts[d.Of] = make([]*Doc, d.OfSpans)
			at[len(out)] = d.Of
			out = append(out, Doc{})
		}
		parts[d.Of][d.Span-1] = d // Validate keeps Span within 1..OfSpans
	}
	for i, id := range at {
		ps := parts[id]
		w := Doc{ID: id, Source: ps[0].Source, Windows: len(ps), FirstUnscored: ps[0].FirstUnscored, TextBytes: ps[0].TextBytes}
		for _, p := range ps {
			w.Bytes += p.Bytes
			w.Tokens += p.Tokens
			w.Spans = append(w.Spans, Span{Tokens: p.Tokens, Bits: p.Bits})
		}
		w.Bits = SpanBits(w.Spans)
		out[i] = w
	}
	return out
}

// checkSpans is Validate's part for spans: a whole document's spans add
// up to its tokens, one per window; a span record names its place.
func (d *Doc) checkSpans() error {
	if len(d.Spans) > 0 {
		tokens := 0
		for _, s := range d.Spans {
			if s.Tokens < 1 {
				return fmt.Errorf("document %s: a span of %d tokens", d.ID, s.Tokens)
			}
			tokens += s.Tokens
		}
		if tokens != d.Tokens || len(d.Spans) != d.Windows || d.Of != "" {
			return fmt.Errorf("document %s: %d spans of %d tokens in all, for %d windows of %d tokens", d.ID, len(d.Spans), tokens, d.Windows, d.Tokens)
		}
	}
	if d.Of != "" || d.Span != 0 || d.OfSpans != 0 {
		if d.Span < 1 || d.Span > d.OfSpans || d.ID != SpanID(d.Of, d.Span) || d.Tokens < 1 {
			return fmt.Errorf("document span %s: span %d of %d of document %q with %d tokens; want the id %s and at least one token", d.ID, d.Span, d.OfSpans, d.Of, d.Tokens, SpanID(d.Of, d.Span))
		}
	}
	return nil
}
