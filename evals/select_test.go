package evals

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// corpus makes keys in groups of the given sizes: ids "<group>-<n>".
func corpus(sizes map[string]int) []Keyed {
	var keys []Keyed
	for _, g := range runfile.SortedKeys(sizes) {
		for i := range sizes[g] {
			keys = append(keys, Keyed{ID: fmt.Sprintf("%s-%04d", g, i), Group: g})
		}
	}
	return keys
}

func countGroups(ids []string) map[string]int {
	n := map[string]int{}
	for _, id := range ids {
		n[id[:strings.LastIndexByte(id, '-')]]++
	}
	return n
}

func TestSampleStratified(t *testing.T) {
	t.Parallel()
	keys := corpus(map[string]int{"arxiv": 300, "wikipedia": 600, "tiny": 100})
	tests := []struct {
		n    int
		want map[string]int
	}{
		{100, map[string]int{"arxiv": 30, "wikipedia": 60, "tiny": 10}},
		{7, map[string]int{"arxiv": 2, "wikipedia": 4, "tiny": 1}}, // 2.1, 4.2, 0.7: largest remainder to tiny
		{1000, map[string]int{"arxiv": 300, "wikipedia": 600, "tiny": 100}},
		{5000, map[string]int{"arxiv": 300, "wikipedia": 600, "tiny": 100}},
	}
	for _, tt := range tests {
		s, err := Sample(keys, tt.n, 42)
		if err != nil {
			t.Fatal(err)
		}
		if got := countGroups(s.IDs); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Sample(n=%d) groups %v, want %v", tt.n, got, tt.want)
		}
		if !sort.StringsAreSorted(s.IDs) || s.N != tt.n || s.Seed != 42 {
			t.Errorf("Sample(n=%d): ids not sorted or n/seed not recorded: %+v", tt.n, s)
		}
	}
	if _, err := Sample(keys, 0, 1); err == nil {
		t.Error("Sample(n=0): no error")
	}
}

func TestSampleReproducible(t *testing.T) {
	t.Parallel()
	keys := corpus(map[string]int{"a": 50, "b": 80})
	s1, _ := Sample(keys, 20, 7)
	// The input order must not matter: shuffle a copy.
	shuffled := append([]Keyed(nil), keys...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	s2, _ := Sample(shuffled, 20, 7)
	if !reflect.DeepEqual(s1.IDs, s2.IDs) {
		t.Errorf("same n and seed, other input order: %v vs %v", s1.IDs, s2.IDs)
	}
	s3, _ := Sample(keys, 20, 8)
	if reflect.DeepEqual(s1.IDs, s3.IDs) {
		t.Error("seeds 7 and 8 chose the same ids")
	}
	// Pinned: a change of generator or algorithm would unpair old runs.
	want := []string{"a-0007", "a-0020", "a-0032", "a-0034", "a-0035", "a-0037", "a-0040", "a-0041",
		"b-0016", "b-0024", "b-0026", "b-0027", "b-0037", "b-0046", "b-0048", "b-0063", "b-0065", "b-0067", "b-0071", "b-0074"}
	if !reflect.DeepEqual(s1.IDs, want) {
		t.Errorf("Sample(n=20, seed=7) = %#v, the pinned selection changed", s1.IDs)
	}
}

func TestParseShard(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want *runfile.Shard
	}{
		{"1/1", &runfile.Shard{Index: 1, Count: 1}},
		{"2/4", &runfile.Shard{Index: 2, Count: 4}},
		{"0/4", nil}, {"5/4", nil}, {"1/0", nil}, {"a/4", nil}, {"2", nil}, {"", nil}, {"1/2/3", nil},
	} {
		got, err := ParseShard(tt.in)
		if tt.want == nil {
			if err == nil {
				t.Errorf("ParseShard(%q) = %+v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || *got != *tt.want {
			t.Errorf("ParseShard(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestInShardPartition(t *testing.T) {
	t.Parallel()
	keys := corpus(map[string]int{"a": 10, "b": 13})
	var ids []string
	for _, k := range keys {
		ids = append(ids, k.ID)
	}
	for n := 1; n <= 5; n++ {
		seen := map[string]int{}
		sizes := []int{}
		for i := 1; i <= n; i++ {
			part := InShard(ids, &runfile.Shard{Index: i, Count: n})
			sizes = append(sizes, len(part))
			for id := range part {
				seen[id]++
			}
		}
		for _, id := range ids {
			if seen[id] != 1 {
				t.Errorf("n=%d: %s is in %d shards, want exactly 1", n, id, seen[id])
			}
		}
		sort.Ints(sizes)
		if sizes[len(sizes)-1]-sizes[0] > 1 {
			t.Errorf("n=%d: shard sizes %v differ by more than one", n, sizes)
		}
	}
}

func TestSelect(t *testing.T) {
	t.Parallel()
	keys := corpus(map[string]int{"a": 20, "b": 20})
	// Sample, then shard: the shards of a sample join into the sample.
	var union []string
	for i := 1; i <= 3; i++ {
		sel, idx, err := Select(keys, Selection{Sample: 10, Seed: 5, Shard: &runfile.Shard{Index: i, Count: 3}})
		if err != nil {
			t.Fatal(err)
		}
		if sel.Sample == nil || len(sel.Sample.IDs) != 10 || sel.Shard.Index != i {
			t.Fatalf("shard %d: selection %+v", i, sel)
		}
		for _, j := range idx {
			union = append(union, keys[j].ID)
		}
	}
	sort.Strings(union)
	s, _ := Sample(keys, 10, 5)
	if !reflect.DeepEqual(union, s.IDs) {
		t.Errorf("union of shards %v, want the sample %v", union, s.IDs)
	}
	// Limit keeps data order.
	_, idx, _ := Select(keys, Selection{Limit: 3})
	if !reflect.DeepEqual(idx, []int{0, 1, 2}) {
		t.Errorf("limit 3: %v", idx)
	}
	sel, idx, _ := Select(keys, Selection{})
	if len(idx) != 40 || sel.Sample != nil || sel.Shard != nil {
		t.Errorf("no selection: %d indexes, %+v", len(idx), sel)
	}
}

// --match narrows the set before anything else: a sample is drawn from
// the matching records, stratified among them, and a sequential run, which
// is about the whole set, refuses it.
func TestSelectMatch(t *testing.T) {
	t.Parallel()
	keys := corpus(map[string]int{"add": 30, "mul": 30, "units": 30})
	addOrMul := regexp.MustCompile(`^(add|mul)-`)
	tests := []struct {
		name   string
		sel    Selection
		groups map[string]int // the selected ids by group
		err    string
	}{
		{"match alone", Selection{Match: addOrMul}, map[string]int{"add": 30, "mul": 30}, ""},
		{"then the sample, among the matches", Selection{Match: addOrMul, Sample: 10, Seed: 3}, map[string]int{"add": 5, "mul": 5}, ""},
		{"then the limit", Selection{Match: regexp.MustCompile(`^units-`), Limit: 4}, map[string]int{"units": 4}, ""},
		{"nothing matches", Selection{Match: regexp.MustCompile(`^div-`)}, map[string]int{}, ""},
		{"sequential refuses it", Selection{Match: addOrMul, Until: &Until{}}, nil, "keeps 60 of its 90 records"},
	}
	for _, tt := range tests {
		sel, idx, err := Select(keys, tt.sel)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var ids []string
		for _, i := range idx {
			ids = append(ids, keys[i].ID)
		}
		if got := countGroups(ids); !reflect.DeepEqual(got, tt.groups) {
			t.Errorf("%s: groups %v, want %v", tt.name, got, tt.groups)
		}
		if tt.sel.Sample > 0 && (sel.Sample == nil || !reflect.DeepEqual(sel.Sample.IDs, ids)) {
			t.Errorf("%s: the header's sample %+v, scored %v", tt.name, sel.Sample, ids)
		}
	}
}
