package compare

import "github.com/udgamlabs/udgam-ci/runfile"

// record is one shared document or item: each run's numerator and
// denominator of the score (bits and bytes; correct and 1), so both tests
// use the same ratio-of-sums statistic.
type record struct {
	id, group, level string
	bn, bd, hn, hd   float64
	// Probes: log-prob of the answer minus the best other choice.
	baseMargin, headMargin float64
	// Probes: the byte-normalised margin (runfile.NormMargin); hasNorm is
	// false when either record lacks per-byte scores.
	baseNorm, headNorm float64
	hasNorm            bool
}

// paired holds the shared records in base-run order and what was left out.
type paired struct {
	recs               []record
	onlyBase, onlyHead int
}

// pairDocs pairs documents; a run over spans (runfile.UnitSpan) pairs
// whole with the other run where all its spans are in, its span records
// otherwise, so a finished run over spans compares exactly as the whole
// run does.
func pairDocs(base, head []runfile.Doc) paired {
	base, head = runfile.JoinSpans(base), runfile.JoinSpans(head)
	base, head = splitFor(base, head), splitFor(head, base)
	return pairByID(base, head, func(d *runfile.Doc) string { return d.ID }, func(b, h *runfile.Doc) record {
		return record{id: b.ID, group: runfile.OrNone(b.Source), bn: b.Bits, bd: float64(b.Bytes), hn: h.Bits, hd: float64(h.Bytes)}
	})
}

func pairItems(base, head []runfile.Item) paired {
	return pairByID(base, head, func(it *runfile.Item) string { return it.ID }, func(b, h *runfile.Item) record {
		return record{id: b.ID, group: b.Type, level: runfile.LevelKey(b.Type, b.Level),
			bn: b2f(b.Correct), bd: 1, hn: b2f(h.Correct), hd: 1,
			baseMargin: margin(b), headMargin: margin(h)}.withNorm(b, h)
	})
}

// splitFor replaces each whole document of docs that other holds only as
// span records with its span records.
func splitFor(docs, other []runfile.Doc) []runfile.Doc {
	part := map[string]bool{}
	for i := range other {
		if other[i].Of != "" {
			part[other[i].Of] = true
		}
	}
	if len(part) == 0 {
		return docs
	}
	var out []runfile.Doc
	for i := range docs {
		if d := &docs[i]; part[d.ID] && len(d.Spans) > 0 {
			out = append(out, runfile.SplitSpans(d)...)
		} else {
			out = append(out, *d)
		}
	}
	return out
}

// pairByID joins the records with the same id, in base-run order (ids are
// unique within a run: runfile.Read checks it).
func pairByID[T any](base, head []T, id func(*T) string, join func(b, h *T) record) paired {
	byID := make(map[string]*T, len(head))
	for i := range head {
		byID[id(&head[i])] = &head[i]
	}
	var p paired
	for i := range base {
		h, ok := byID[id(&base[i])]
		if !ok {
			p.onlyBase++
			continue
		}
		p.recs = append(p.recs, join(&base[i], h))
	}
	p.onlyHead = len(head) - len(p.recs)
	return p
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// margin is how far the answer's log-prob is above the best wrong choice:
// positive when the item is answered right (ties aside).
func margin(it *runfile.Item) float64 { return runfile.MarginOf(it.Logprobs, it.Answer) }

// point is each run's score over a set of records, and its denominators.
type point struct {
	base, head       float64
	baseDen, headDen float64
}

func estimate(recs []record, scale float64) point {
	var bn, bd, hn, hd float64
	for i := range recs {
		r := &recs[i]
		bn, bd, hn, hd = bn+r.bn, bd+r.bd, hn+r.hn, hd+r.hd
	}
	return point{base: runfile.Ratio(scale, bn, bd), head: runfile.Ratio(scale, hn, hd), baseDen: bd, headDen: hd}
}
