//go:build cgo

package llama

import (
	"testing"

	"github.com/udgamlabs/udgam-ci/runner"
)

func TestPartsSpreadReadsEvenly(t *testing.T) {
	t.Parallel()
	entry := func(read bool) runner.Entry {
		if read {
			return runner.Entry{Reads: []runner.Read{{}}}
		}
		return runner.Entry{}
	}
	for _, c := range []struct {
		pattern  string // r reads, . does not
		most     int
		wantRead []int // reads per part
	}{
		{"rrrr", 4, []int{4}},
		{"....", 1, []int{0}},
		{"rrrrr", 4, []int{3, 2}},
		{"rrrrrrrrr", 4, []int{3, 3, 3}},
		{"..r.r.r..r.r.", 2, []int{2, 2, 1}},
		{"rrrrrrrr", 1, []int{1, 1, 1, 1, 1, 1, 1, 1}},
	} {
		var entries []runner.Entry
		for _, ch := range c.pattern {
			entries = append(entries, entry(ch == 'r'))
		}
		got := parts(entries, c.most)
		n := 0
		var reads []int
		for _, p := range got {
			k := 0
			for i, e := range p {
				if &p[i] != &entries[n] {
					t.Fatalf("%q: part entries are not the step's, in order", c.pattern)
				}
				n++
				if len(e.Reads) > 0 {
					k++
				}
			}
			reads = append(reads, k)
		}
		if n != len(entries) {
			t.Fatalf("%q: parts hold %d of %d entries", c.pattern, n, len(entries))
		}
		if len(reads) != len(c.wantRead) {
			t.Fatalf("%q, at most %d: reads per part %v, want %v", c.pattern, c.most, reads, c.wantRead)
		}
		for i := range reads {
			if reads[i] != c.wantRead[i] {
				t.Fatalf("%q, at most %d: reads per part %v, want %v", c.pattern, c.most, reads, c.wantRead)
			}
		}
	}
}
