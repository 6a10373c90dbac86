package runfile

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// A document split into its span records and joined back is the same
// record to the bit, wherever its spans come in a file; documents with
// spans missing stay spans; span bytes add up to the document's.
func TestSplitJoinSpans(t *testing.T) {
	t.Parallel()
	g := rand.New(rand.NewPCG(1, 2))
	var whole []Doc
	for i := range 40 {
		n := 1 + g.IntN(6)
		d := Doc{ID: "doc" + string(rune('A'+i%26)) + string(rune('a'+i/26)), Source: "wiki", TextBytes: 0, Windows: n}
		for range n {
			s := Span{Tokens: 1 + g.IntN(1024), Bits: 1000 * g.Float64()}
			d.Spans = append(d.Spans, s)
			d.Tokens += s.Tokens
		}
		d.Bytes = d.Tokens*3 + g.IntN(d.Tokens)
		d.Bits = SpanBits(d.Spans)
		whole = append(whole, d)
	}
	var spans []Doc
	for i := range whole {
		parts := SplitSpans(&whole[i])
		sum := 0
		for _, p := range parts {
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			sum += p.Bytes
		}
		if sum != whole[i].Bytes {
			t.Fatalf("%s: spans hold %d bytes of %d", whole[i].ID, sum, whole[i].Bytes)
		}
		spans = append(spans, parts...)
	}
	g.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
	dropped := spans[0] // one document loses a span: it stays in spans
	joined := JoinSpans(spans[1:])
	byID := map[string]Doc{}
	for _, d := range joined {
		byID[d.ID] = d
	}
	for _, w := range whole {
		got, ok := byID[w.ID]
		if w.ID == dropped.Of {
			if ok {
				t.Errorf("%s joined with a span missing", w.ID)
			}
			continue
		}
		if err := got.Validate(); err != nil || !reflect.DeepEqual(got, w) {
			t.Errorf("%s joined: %+v (%v), want %+v", w.ID, got, err, w)
		}
	}
	// a run of spans summarizes as its documents: whole where all their
	// spans are in, the others by their spans
	sum, want := SummarizeFresh(spans[1:]), SummarizeFresh(whole)
	if sum.Docs != want.Docs-1+spanCount(whole, dropped.Of)-1 || sum.Bytes != want.Bytes-dropped.Bytes {
		t.Errorf("summary of the spans: %d records over %d bytes; the whole run %d over %d", sum.Docs, sum.Bytes, want.Docs, want.Bytes)
	}
	if bad := (Doc{ID: "a#2", Of: "a", Span: 3, OfSpans: 2, Tokens: 1, Bytes: 1, Windows: 1}); bad.Validate() == nil {
		t.Error("a span record past its document's spans was accepted")
	}
	if bad := (Doc{ID: "a", Tokens: 5, Bytes: 9, Windows: 2, Spans: []Span{{Tokens: 2}, {Tokens: 2}}}); bad.Validate() == nil {
		t.Error("spans that do not add up to the tokens were accepted")
	}
}

// spanCount is how many spans document id of docs has.
func spanCount(docs []Doc, id string) int {
	for i := range docs {
		if docs[i].ID == id {
			return len(docs[i].Spans)
		}
	}
	return 0
}
