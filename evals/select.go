package evals

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/udgamlabs/udgam-ci/internal/splitmix"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Keyed is one document or item as selection sees it: its id and the group
// that sampling keeps in proportion (a document's source, an item's type
// and level).
type Keyed struct {
	ID    string
	Group string
}

// Sample picks n of keys, stratified by group, reproducibly: the same keys,
// n and seed give the same ids on every machine (the ids are sorted first
// and the generator is our own). Each group gets n in proportion to its
// size (largest remainders, ties to the earlier group name). The result
// records n, the seed and the chosen ids in sorted order; when n is at
// least len(keys) every id is chosen.
func Sample(keys []Keyed, n int, seed int64) (*runfile.Sample, error) {
	if n <= 0 {
		return nil, fmt.Errorf("sample: n is %d, want a positive number", n)
	}
	groups := map[string][]string{}
	for _, k := range keys {
		groups[k.Group] = append(groups[k.Group], k.ID)
	}
	names := runfile.SortedKeys(groups)
	quota := apportion(names, groups, min(n, len(keys)))
	rng := splitmix.New(uint64(seed))
	var ids []string
	for _, g := range names {
		members := groups[g]
		sort.Strings(members)
		// A partial Fisher-Yates shuffle: the first quota[g] are the pick.
		for i := 0; i < quota[g]; i++ {
			j := i + int(rng.Below(uint64(len(members)-i)))
			members[i], members[j] = members[j], members[i]
		}
		ids = append(ids, members[:quota[g]]...)
	}
	sort.Strings(ids)
	return &runfile.Sample{N: n, Seed: seed, IDs: ids}, nil
}

// apportion shares n among groups in proportion to their sizes by largest
// remainders; names is sorted, which breaks ties.
func apportion(names []string, groups map[string][]string, n int) map[string]int {
	total := 0
	for _, g := range names {
		total += len(groups[g])
	}
	quota := map[string]int{}
	if total == 0 {
		return quota
	}
	type rest struct {
		name string
		num  int // remainder numerator over total
	}
	var rests []rest
	given := 0
	for _, g := range names {
		q := n * len(groups[g])
		quota[g] = q / total
		given += quota[g]
		rests = append(rests, rest{g, q % total})
	}
	sort.SliceStable(rests, func(i, j int) bool { return rests[i].num > rests[j].num })
	for i := 0; given < n; i++ {
		quota[rests[i].name]++
		given++
	}
	return quota
}

// ParseShard reads --shard i/n (1 <= i <= n).
func ParseShard(s string) (*runfile.Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return nil, fmt.Errorf("shard %q: want i/n with 1 <= i <= n, e.g. 2/4", s)
	}
	return &runfile.Shard{Index: i, Count: n}, nil
}

// InShard reports which ids fall in shard: the ids are sorted and dealt
// round-robin, so the n shards are disjoint, cover every id, differ in size
// by at most one and mix groups whose ids share a prefix. A nil shard
// keeps everything.
func InShard(ids []string, shard *runfile.Shard) map[string]bool {
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	keep := make(map[string]bool, len(sorted))
	for i, id := range sorted {
		if shard == nil || i%shard.Count == shard.Index-1 {
			keep[id] = true
		}
	}
	return keep
}

// Selection is which records a run scores out of its data, and in what
// order: the options every scorer takes whole (RunCommon) and applies with
// Select. The zero Selection is every record, in data order.
type Selection struct {
	// Match keeps only the records whose id it matches (--match), before
	// anything else; nil keeps every record.
	Match  *regexp.Regexp
	Sample int   // 0: every record; else a seeded subset of this many, stratified by group
	Seed   int64 // of Sample
	// Contamination records what a scan found; when Excluded, the ids it
	// found are left out. It applies after the sample, so runs with and
	// without it still pair on the rest.
	Contamination *runfile.Contamination
	Shard         *runfile.Shard // nil: one part
	Limit         int            // 0: no limit; else the first Limit after the rest, in data order
	// Until makes the run sequential (--until decided): the whole set in
	// its seeded order, stopping once the comparison with a baseline
	// decides; nil scores every selected record.
	Until *Until
}

// Selected is what Select applied, for the run header.
type Selected struct {
	Sample        *runfile.Sample // nil: every id
	Shard         *runfile.Shard  // nil: one part
	Contamination *runfile.Contamination
}

// Select returns the indexes of keys a run scores. A fixed run takes them
// in data order: first the match, then the sample, then the contamination
// exclusion, then the shard, then the limit. A sequential run (s.Until)
// takes the whole set, refusing a selection that leaves records out (its
// delta is the whole set's), in the Until's order, and deals the shard's
// positions of that order (Until.Order).
func Select(keys []Keyed, s Selection) (Selected, []int, error) {
	sel := Selected{Shard: s.Shard, Contamination: s.Contamination}
	if s.Sample > 0 {
		var matched []Keyed
		for _, k := range keys {
			if s.Match == nil || s.Match.MatchString(k.ID) {
				matched = append(matched, k)
			}
		}
		smp, err := Sample(matched, s.Sample, s.Seed)
		if err != nil {
			return Selected{}, nil, err
		}
		sel.Sample = smp
	}
	if s.Until == nil {
		return sel, selectFixed(keys, s, sel.Sample), nil
	}
	whole := s
	whole.Shard = nil
	idx := selectFixed(keys, whole, sel.Sample)
	if sel.Sample != nil || len(idx) != len(keys) {
		return Selected{}, nil, fmt.Errorf("--until decided scores the whole set in a random order (--budget stops it early); the selection (--sample, --limit, --exclude, ...) keeps %d of its %d records (--contamination records a scan and leaves none out)", len(idx), len(keys))
	}
	idx, err := s.Until.Order(keys, idx, s.Shard)
	return sel, idx, err
}

// selectFixed is a fixed run's indexes of keys, in data order: those s
// matches, of the sample smp when one was drawn, not excluded, in the
// shard, up to the limit.
func selectFixed(keys []Keyed, s Selection, smp *runfile.Sample) []int {
	var ids []string
	for _, k := range keys {
		if s.Match == nil || s.Match.MatchString(k.ID) {
			ids = append(ids, k.ID)
		}
	}
	if smp != nil {
		ids = smp.IDs
	}
	if c := s.Contamination; c != nil && c.Excluded {
		out := map[string]bool{}
		for _, id := range c.IDs {
			out[id] = true
		}
		ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return out[id] })
	}
	keep := InShard(ids, s.Shard)
	var idx []int
	for i, k := range keys {
		if keep[k.ID] && (s.Limit <= 0 || len(idx) < s.Limit) {
			idx = append(idx, i)
		}
	}
	return idx
}
