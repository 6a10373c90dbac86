package runfile

import "sort"

// Ratio is scale·num/den, and 0 when den is 0: the one way every surface
// computes a score from its sums, multiplying before dividing so that
// 689 of 2,000 is 34.45 (one rounding) on every page, never 34.449999.
func Ratio(scale, num, den float64) float64 {
	if den == 0 {
		return 0
	}
	return scale * num / den
}

// Percent is k of n in percent (see Ratio).
func Percent(k, n int) float64 { return Ratio(100, float64(k), float64(n)) }

// FreshGroup sums one group of documents. BPB is a ratio of sums.
type FreshGroup struct {
	Docs   int     `json:"docs"`
	Tokens int     `json:"tokens"`
	Bytes  int     `json:"bytes"`
	Bits   float64 `json:"bits"`
	BPB    float64 `json:"bpb"`
}

func (g *FreshGroup) add(d *Doc) {
	g.Docs++
	g.Tokens += d.Tokens
	g.Bytes += d.Bytes
	g.Bits += d.Bits
}

func (g *FreshGroup) finish() {
	if g.Bytes > 0 {
		g.BPB = Ratio(1, g.Bits, float64(g.Bytes))
	}
}

// FreshSummary is the fresh-text score of a set of records.
type FreshSummary struct {
	FreshGroup
	BySource map[string]*FreshGroup `json:"by_source"`
}

// SummarizeFresh recomputes the score from document records.
func SummarizeFresh(docs []Doc) FreshSummary {
	docs = JoinSpans(docs) // a document whose spans are all in counts once, whole
	s := FreshSummary{BySource: map[string]*FreshGroup{}}
	for i := range docs {
		d := &docs[i]
		s.add(d)
		g := s.BySource[d.Source]
		if g == nil {
			g = &FreshGroup{}
			s.BySource[d.Source] = g
		}
		g.add(d)
	}
	s.finish()
	for _, g := range s.BySource {
		g.finish()
	}
	return s
}

// ProbeGroup counts one group of items. Accuracy is in percent; Chance is
// the expected accuracy of guessing, in percent.
type ProbeGroup struct {
	Items    int     `json:"items"`
	Correct  int     `json:"correct"`
	Ties     int     `json:"ties"`
	Accuracy float64 `json:"accuracy"`
	Chance   float64 `json:"chance"`
}

func (g *ProbeGroup) add(it *Item) {
	g.Items++
	if it.Correct {
		g.Correct++
	}
	if it.Tie {
		g.Ties++
	}
	g.Chance += 100 / float64(len(it.Logprobs))
}

func (g *ProbeGroup) finish() {
	if g.Items > 0 {
		g.Accuracy = Percent(g.Correct, g.Items)
		g.Chance /= float64(g.Items)
	}
}

// ProbeSummary is the probe score of a set of records.
type ProbeSummary struct {
	ProbeGroup
	ByType  map[string]*ProbeGroup `json:"by_type"`
	ByLevel map[string]*ProbeGroup `json:"by_level"` // key "type/level"
}

// SummarizeProbes recomputes the score from item records.
func SummarizeProbes(items []Item) ProbeSummary {
	s := ProbeSummary{ByType: map[string]*ProbeGroup{}, ByLevel: map[string]*ProbeGroup{}}
	for i := range items {
		it := &items[i]
		s.add(it)
		group(s.ByType, it.Type).add(it)
		group(s.ByLevel, LevelKey(it.Type, it.Level)).add(it)
	}
	s.finish()
	for _, g := range s.ByType {
		g.finish()
	}
	for _, g := range s.ByLevel {
		g.finish()
	}
	return s
}

// LevelKey names a type and level group, e.g. "add/2".
func LevelKey(typ string, level int) string { return typ + "/" + itoa(level) }

func group(m map[string]*ProbeGroup, k string) *ProbeGroup {
	g := m[k]
	if g == nil {
		g = &ProbeGroup{}
		m[k] = g
	}
	return g
}

// SortedKeys returns a map's keys in order, for stable output.
func SortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
