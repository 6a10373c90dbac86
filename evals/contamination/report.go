package contamination

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// Schema names the report format.
const Schema = "udgam-ci.contamination/v1"

// Normalization says in the report how text was compared.
const Normalization = "lower case (Unicode simple case mapping); words are runs of letters, digits and marks (Unicode L, N, M); each Han/Kana/Thai/Lao/Khmer/Myanmar letter is a word of its own with the marks that follow it, and digits group into numbers; everything else, and bytes that are not UTF-8, separates words; n-grams never span two records"

// Report is the result of a scan: a JSON file that `contamination merge`
// combines across shards and that `score --exclude` reads.
type Report struct {
	Schema        string `json:"schema"`
	N             int    `json:"n"`
	MinWords      int    `json:"min_words"`
	Normalization string `json:"normalization"`
	// IndexSHA256 identifies the test items and n: only reports of the same
	// index merge.
	IndexSHA256 string             `json:"index_sha256"`
	Tests       map[string]TestSet `json:"tests"`
	Shard       string             `json:"shard,omitempty"`
	MinFraction float64            `json:"min_fraction"`
	TextField   string             `json:"text_field,omitempty"` // JSON key or Parquet column read
	Train       []TrainFile        `json:"train"`
	Words       int64              `json:"words"`
	Bytes       int64              `json:"bytes"`
	Summary     map[string]Summary `json:"summary"` // by test
	Items       []ItemHit          `json:"items"`   // contaminated items only
	TooShort    []string           `json:"too_short,omitempty"`
}

// TestSet names the data a test's items came from.
type TestSet struct {
	Name     string `json:"name"`
	Revision string `json:"revision,omitempty"`
	SHA256   string `json:"sha256"`
	Count    int    `json:"count"`
}

// TrainFile is one scanned training file.
type TrainFile struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Records int64  `json:"records"`
	// NoText counts records without the text field (JSON Lines) or with a
	// null value (Parquet): they are not scanned, and the report says so.
	// NoTextFirst is the first such record's line (or row).
	NoText      int64 `json:"no_text,omitempty"`
	NoTextFirst int   `json:"no_text_first,omitempty"`
	Words       int64 `json:"words"`
	Bytes       int64 `json:"bytes"`
	// InvalidUTF8 counts bytes of text that are not UTF-8 (each separates
	// words); InvalidUTF8First is the first record (line or row) with one.
	InvalidUTF8      int64 `json:"invalid_utf8,omitempty"`
	InvalidUTF8First int   `json:"invalid_utf8_first,omitempty"`
}

// noText counts record n (a line or row) as holding no text.
func (tf *TrainFile) noText(n int) {
	if tf.NoText == 0 {
		tf.NoTextFirst = n
	}
	tf.NoText++
}

// ItemHit is one contaminated item.
type ItemHit struct {
	Test     string   `json:"test"`
	ID       string   `json:"id"`
	Group    string   `json:"group,omitempty"`
	NGrams   int      `json:"ngrams"`  // the item's n-grams (1 for an item matched whole)
	Matched  int      `json:"matched"` // of them, found in the training data
	Fraction float64  `json:"fraction"`
	First    Location `json:"first"`
	// Positions lists the matched n-grams by first word, so that shards
	// merge exactly.
	Positions []int32 `json:"positions"`
}

// Summary counts one test's items.
type Summary struct {
	Items        int                `json:"items"`
	Contaminated int                `json:"contaminated"`
	Above        int                `json:"above_min_fraction"`
	ByGroup      map[string]Summary `json:"by_group,omitempty"`
}

// fingerprint hashes what decides which n-grams an index holds.
func (ix *Index) fingerprint() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00n=%d\x00min=%d\x00", Normalization, ix.n, ix.minWords)
	for _, d := range ix.items {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", d.Test, d.ID, d.Text)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// build fills a report's items and summary from hits.
func (ix *Index) build(r *Report, hits map[int32]*hit) {
	r.Items = r.Items[:0]
	for id, h := range hits {
		d := &ix.items[id]
		pos := sortedPositions(h.positions)
		r.Items = append(r.Items, ItemHit{Test: d.Test, ID: d.ID, Group: d.Group, NGrams: d.grams,
			Matched: len(pos), Fraction: float64(len(pos)) / float64(d.grams), First: h.first, Positions: pos})
	}
	slices.SortFunc(r.Items, func(a, b ItemHit) int {
		return cmp.Or(cmp.Compare(a.Test, b.Test), cmp.Compare(a.ID, b.ID))
	})
	r.Summary = map[string]Summary{}
	found := map[string]*ItemHit{}
	for i := range r.Items {
		found[r.Items[i].Test+"\x00"+r.Items[i].ID] = &r.Items[i]
	}
	for _, d := range ix.items {
		s := r.Summary[d.Test]
		if s.ByGroup == nil {
			s.ByGroup = map[string]Summary{}
		}
		g := s.ByGroup[d.Group]
		s.Items++
		g.Items++
		if it := found[d.Test+"\x00"+d.ID]; it != nil {
			s.Contaminated++
			g.Contaminated++
			if it.Fraction > r.MinFraction {
				s.Above++
				g.Above++
			}
		}
		s.ByGroup[d.Group] = g
		r.Summary[d.Test] = s
	}
}

// hitsFrom turns a report's items back into hits, for merging and resuming.
func (ix *Index) hitsFrom(items []ItemHit) (map[int32]*hit, error) {
	byKey := make(map[string]int32, len(ix.items))
	for i, d := range ix.items {
		byKey[d.Test+"\x00"+d.ID] = int32(i)
	}
	out := map[int32]*hit{}
	for _, it := range items {
		id, ok := byKey[it.Test+"\x00"+it.ID]
		if !ok {
			return nil, fmt.Errorf("%s item %q is not in the test set", it.Test, it.ID)
		}
		h := &hit{positions: map[int32]bool{}, first: it.First}
		for _, p := range it.Positions {
			if p < 0 || int(p) >= max(ix.items[id].grams, 1) {
				return nil, fmt.Errorf("%s item %q: n-gram position %d out of range", it.Test, it.ID, p)
			}
			h.positions[p] = true
		}
		out[id] = h
	}
	return out, nil
}

// ReadReport reads a report file.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read contamination report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read contamination report %s: %w", path, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("read contamination report %s: schema %q, want %q", path, r.Schema, Schema)
	}
	return &r, nil
}

// Encode writes the report as indented JSON.
func (r *Report) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Contaminated returns the ids of one test's contaminated items whose
// fraction is above minFraction, sorted: what `score --exclude` leaves out.
func (r *Report) Contaminated(test string, minFraction float64) []string {
	var out []string
	for _, it := range r.Items {
		if it.Test == test && it.Fraction > minFraction {
			out = append(out, it.ID)
		}
	}
	sort.Strings(out)
	return out
}

// Check reads the report at path and returns what it found for a run of
// test over dataset: the items with more than minFraction of their n-grams
// in the training data. It refuses a report scanned against other data,
// whose ids would mean nothing here.
func Check(path, test string, dataset runfile.Dataset, minFraction float64) (*runfile.Contamination, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read contamination report: %w", err)
	}
	r, err := ReadReport(path)
	if err != nil {
		return nil, err
	}
	ts, ok := r.Tests[test]
	if !ok {
		return nil, fmt.Errorf("contamination report %s did not check %s (it checked %s)", path, test, strings.Join(slices.Sorted(mapKeys(r.Tests)), ", "))
	}
	if ts.SHA256 != dataset.SHA256 {
		return nil, fmt.Errorf("contamination report %s was scanned against %s %s (sha256 %s), not the data being scored (%s, sha256 %s)", path, test, ts.Name, short(ts.SHA256), dataset.Name, short(dataset.SHA256))
	}
	sum := sha256.Sum256(b)
	return &runfile.Contamination{Report: filepath.Base(path), SHA256: hex.EncodeToString(sum[:]), N: r.N,
		MinFraction: minFraction, Checked: r.Summary[test].Items, IDs: r.Contaminated(test, minFraction)}, nil
}
