package textprep

import "sort"

// literals finds the first occurrence of any of a set of token texts in a
// text: only at bytes that start some literal, and only for the lengths the
// set has, so thousands of tokens (Gemma's <unusedN>) cost little.
type literals struct {
	first [256]bool
	lens  []int // distinct lengths, longest first (the longest match wins)
	set   map[string]bool
}

func newLiterals(texts []string) *literals {
	l := &literals{set: map[string]bool{}}
	seen := map[int]bool{}
	for _, s := range texts {
		if s == "" {
			continue
		}
		l.first[s[0]] = true
		l.set[s] = true
		if !seen[len(s)] {
			seen[len(s)] = true
			l.lens = append(l.lens, len(s))
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(l.lens)))
	return l
}

// find returns the first literal in text and its byte offset.
func (l *literals) find(text string) (string, int, bool) {
	if l == nil || len(l.set) == 0 {
		return "", 0, false
	}
	for i := 0; i < len(text); i++ {
		if !l.first[text[i]] {
			continue
		}
		for _, n := range l.lens {
			if i+n <= len(text) && l.set[text[i:i+n]] {
				return text[i : i+n], i, true
			}
		}
	}
	return "", 0, false
}
