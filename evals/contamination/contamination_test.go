package contamination

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/udgamlabs/udgam-ci/evals/probes"
)

func TestWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Hello, World!", []string{"hello", "world"}},
		{"  tabs\tand\nnewlines  ", []string{"tabs", "and", "newlines"}},
		{"10,000 apples; 3.5 kg", []string{"10", "000", "apples", "3", "5", "kg"}},
		{"Ünïcödé ÉCOLE", []string{"ünïcödé", "école"}},
		{"e\u0301t\u00e9", []string{"e\u0301t\u00e9"}}, // combining marks stay in the word
		{"日本語のテキスト", []string{"日", "本", "語", "の", "テ", "キ", "ス", "ト"}},
		{"नमस्ते दुनिया", []string{"नमस्ते", "दुनिया"}},
		{"don't 👩‍💻 stop", []string{"don", "t", "stop"}},
		// Thai: each letter a word with the vowel and tone marks after it,
		// digits one number, punctuation (๏) a separator.
		{"สวัสดี ๒๕๖๗ ครับ๏ไม่", []string{"ส", "วั", "ส", "ดี", "๒๕๖๗", "ค", "รั", "บ", "ไ", "ม่"}},
		{"ก๑๒ abc๓ 12ข", []string{"ก", "๑๒", "abc๓", "12", "ข"}},
		{"ab\xffcd", []string{"ab", "cd"}}, // not UTF-8: a separator
		{"", nil},
	} {
		if got := Words(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Words(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// vocabulary makes k pseudo-words.
func vocabulary(rng *rand.Rand, k int) []string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	out := make([]string, k)
	for i := range out {
		b := make([]byte, 3+rng.IntN(6))
		for j := range b {
			b[j] = letters[rng.IntN(len(letters))]
		}
		out[i] = string(b) + fmt.Sprint(i) // distinct
	}
	return out
}

func randomText(rng *rand.Rand, vocab []string, words int) string {
	var b strings.Builder
	seps := []string{" ", " ", " ", ", ", ". ", "\n", "  ", " - "}
	for i := range words {
		if i > 0 {
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		b.WriteString(vocab[rng.IntN(len(vocab))])
	}
	return b.String()
}

// disguise changes case, whitespace and punctuation, which the
// normalisation must see through.
func disguise(rng *rand.Rand, text string) string {
	var b strings.Builder
	for i, w := range strings.Fields(text) {
		if i > 0 {
			b.WriteString([]string{" ", "\t", "  ", "\n", " -- ", ", "}[rng.IntN(6)])
		}
		switch rng.IntN(3) {
		case 0:
			w = strings.ToUpper(w)
		case 1:
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
	}
	return "«" + b.String() + "»"
}

// breakWindows replaces every n-th word, so that no n consecutive words of
// the original survive.
func breakWindows(text string, n int) string {
	words := Words(text)
	for i := n - 1; i < len(words); i += n {
		words[i] = "zzqxj"
	}
	if len(words) < n {
		words[len(words)/2] = "zzqxj"
	}
	return strings.Join(words, " ")
}

type plantSet struct {
	items              []Item
	positive, negative []string // test:id
	corpus             []string // JSON Lines records' texts
}

// planted builds the published validation: 64 items copied (disguised)
// into a synthetic corpus, 64 near misses that must not be flagged. Half
// are real probe items (matched whole), half long documents (13-grams).
func planted(t *testing.T) plantSet {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	core, err := probes.Core()
	if err != nil {
		t.Fatal(err)
	}
	var ps plantSet
	ps.items = ProbeItems(core)
	// Probe items from one template share 13-grams; plant only items that
	// share none, so that a flag can only come from the planted copy.
	count := map[string]int{}
	grams := func(it Item) []string {
		ws := Words(it.Text)
		var out []string
		for i := 0; i+DefaultN <= len(ws); i++ {
			out = append(out, strings.Join(ws[i:i+DefaultN], " "))
		}
		if len(ws) < DefaultN {
			out = append(out, strings.Join(ws, " "))
		}
		return out
	}
	for _, it := range ps.items {
		for _, g := range grams(it) {
			count[g]++
		}
	}
	var unique []int
	for i, it := range ps.items {
		if !slices.ContainsFunc(grams(it), func(g string) bool { return count[g] > 1 }) {
			unique = append(unique, i)
		}
	}
	vocab := vocabulary(rng, 5000)
	for i := range 64 {
		ps.items = append(ps.items, Item{Test: "fresh", ID: fmt.Sprintf("doc-%02d", i), Group: "synthetic", Text: randomText(rng, vocab, 60+rng.IntN(200))})
	}
	filler := func() string { return randomText(rng, vocab, 50+rng.IntN(400)) }
	rng.Shuffle(len(unique), func(i, j int) { unique[i], unique[j] = unique[j], unique[i] })
	perm := unique
	for k := range 64 {
		var it Item
		if k < 32 {
			it = ps.items[perm[k]]
		} else {
			it = ps.items[len(core.Items)+k-32]
		}
		text := it.Text
		if it.Test == "fresh" { // an excerpt of 13 to 40 words
			words := Words(text)
			from := rng.IntN(len(words) - 40)
			text = strings.Join(words[from:from+13+rng.IntN(28)], " ")
		}
		ps.corpus = append(ps.corpus, filler()+" "+disguise(rng, text)+" "+filler())
		ps.positive = append(ps.positive, it.Test+":"+it.ID)
	}
	for k := range 64 {
		var it Item
		if k < 32 {
			it = ps.items[perm[100+k]]
		} else {
			it = ps.items[len(core.Items)+32+k-32]
		}
		ps.corpus = append(ps.corpus, filler()+" "+disguise(rng, breakWindows(it.Text, DefaultN))+" "+filler())
		ps.negative = append(ps.negative, it.Test+":"+it.ID)
	}
	rng.Shuffle(len(ps.corpus), func(i, j int) { ps.corpus[i], ps.corpus[j] = ps.corpus[j], ps.corpus[i] })
	return ps
}

func writeJSONL(t testing.TB, path string, texts []string) {
	t.Helper()
	var b bytes.Buffer
	for i, s := range texts {
		line, _ := json.Marshal(map[string]any{"id": i, "meta": map[string]any{"text": "not this"}, "text": s})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func scanPaths(t *testing.T, ix *Index, opt Options, paths ...string) *Report {
	t.Helper()
	inputs, _, err := LocalInputs(paths)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Scan(context.Background(), ix, inputs, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func flagged(r *Report) []string {
	var out []string
	for _, it := range r.Items {
		out = append(out, it.Test+":"+it.ID)
	}
	slices.Sort(out)
	return out
}

func TestPlantedPositivesAndNearMisses(t *testing.T) {
	t.Parallel()
	ps := planted(t)
	ix, err := NewIndex(ps.items, DefaultN)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "train.jsonl")
	writeJSONL(t, path, ps.corpus)
	r := scanPaths(t, ix, Options{}, path)
	got := flagged(r)
	want := slices.Sorted(slices.Values(ps.positive))
	if !reflect.DeepEqual(got, want) {
		var missed, extra []string
		for _, w := range want {
			if !slices.Contains(got, w) {
				missed = append(missed, w)
			}
		}
		for _, g := range got {
			if !slices.Contains(want, g) {
				extra = append(extra, g)
			}
		}
		t.Fatalf("flagged %d of 64 planted, missed %v; flagged %d others %v", 64-len(missed), missed, len(extra), extra)
	}
	for _, neg := range ps.negative {
		if slices.Contains(got, neg) {
			t.Errorf("near miss %s flagged", neg)
		}
	}
	for _, it := range r.Items {
		if it.First.Line == 0 || it.First.Text == "" || it.Matched == 0 {
			t.Errorf("%s: incomplete hit %+v", it.ID, it)
		}
		if it.Test == "probes" && Words(it.First.Text) == nil {
			t.Errorf("%s: matching text %q has no words", it.ID, it.First.Text)
		}
	}
	if s := r.Summary["probes"]; s.Items != 2000 || s.Contaminated != 32 {
		t.Errorf("probes summary %+v, want 32 of 2000", s)
	}
}

// bruteForce finds, for every item, which of its n-grams (or whole short
// item) occur in the corpus, from the set of all word tuples.
func bruteForce(items []Item, corpus []string, n int) map[string][]int32 {
	seen := map[string]bool{}
	lengths := map[int]bool{n: true}
	for _, it := range items {
		if k := len(Words(it.Text)); k >= MinWords && k < n {
			lengths[k] = true
		}
	}
	for _, doc := range corpus {
		ws := Words(doc)
		for k := range lengths {
			for i := 0; i+k <= len(ws); i++ {
				seen[strings.Join(ws[i:i+k], "\x00")] = true
			}
		}
	}
	out := map[string][]int32{}
	for _, it := range items {
		ws := Words(it.Text)
		switch {
		case len(ws) < MinWords:
		case len(ws) < n:
			if seen[strings.Join(ws, "\x00")] {
				out[it.ID] = []int32{0}
			}
		default:
			for i := 0; i+n <= len(ws); i++ {
				if seen[strings.Join(ws[i:i+n], "\x00")] {
					out[it.ID] = append(out[it.ID], int32(i))
				}
			}
		}
	}
	return out
}

// randomItems makes k items of 3 to 32 words of vocab.
func randomItems(rng *rand.Rand, vocab []string, k int) []Item {
	items := make([]Item, k)
	for i := range items {
		items[i] = Item{Test: "fresh", ID: fmt.Sprintf("i%03d", i), Text: randomText(rng, vocab, 3+rng.IntN(30))}
	}
	return items
}

func TestAgreesWithBruteForce(t *testing.T) {
	t.Parallel()
	// A tiny vocabulary makes chance n-gram matches frequent.
	rng := rand.New(rand.NewPCG(3, 4))
	vocab := vocabulary(rng, 6)
	const n = 6
	items := randomItems(rng, vocab, 300)
	var corpus []string
	size := 0
	for size < 3<<20 {
		doc := randomText(rng, vocab, 20+rng.IntN(2000))
		corpus = append(corpus, doc)
		size += len(doc)
	}
	ix, err := NewIndex(items, n)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "train.jsonl")
	writeJSONL(t, path, corpus)
	r := scanPaths(t, ix, Options{}, path)
	got := map[string][]int32{}
	for _, it := range r.Items {
		got[it.ID] = it.Positions
	}
	want := bruteForce(items, corpus, n)
	if len(want) < 50 {
		t.Fatalf("only %d items match by brute force: the test needs denser matches", len(want))
	}
	if !reflect.DeepEqual(got, want) {
		for id, w := range want {
			if !reflect.DeepEqual(got[id], w) {
				t.Errorf("item %s: scan found n-grams %v, brute force %v", id, got[id], w)
			}
		}
		for id := range got {
			if want[id] == nil {
				t.Errorf("item %s: scan found %v, brute force nothing", id, got[id])
			}
		}
	}
	if r.Words == 0 || r.Bytes != int64(size) {
		t.Errorf("scanned %d words, %d bytes; want %d bytes", r.Words, r.Bytes, size)
	}
}

func writeGzip(t *testing.T, path string, b []byte) {
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	z.Write(b)
	z.Close()
	os.WriteFile(path, buf.Bytes(), 0o644)
}

func writeZstd(t *testing.T, path string, b []byte) {
	z, _ := zstd.NewWriter(nil)
	os.WriteFile(path, z.EncodeAll(b, nil), 0o644)
}

type parquetDoc struct {
	ID      int     `parquet:"id"`
	Content *string `parquet:"content,optional"`
}

func TestFormatsFindTheSame(t *testing.T) {
	t.Parallel()
	ps := planted(t)
	ix, err := NewIndex(ps.items, DefaultN)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "a.jsonl")
	writeJSONL(t, jsonl, ps.corpus)
	raw, _ := os.ReadFile(jsonl)
	writeGzip(t, filepath.Join(dir, "gz", "b.jsonl.gz"), raw)
	os.MkdirAll(filepath.Join(dir, "gz"), 0o755)
	writeGzip(t, filepath.Join(dir, "gz", "b.jsonl.gz"), raw)
	writeZstd(t, filepath.Join(dir, "c.jsonl.zst"), raw)
	// Plain text: one record a paragraph, blank lines between.
	var txt strings.Builder
	for _, s := range ps.corpus {
		txt.WriteString(strings.ReplaceAll(s, "\n", " ") + "\n\n")
	}
	os.WriteFile(filepath.Join(dir, "d.txt"), []byte(txt.String()), 0o644)
	var rows []parquetDoc
	for i, s := range ps.corpus {
		rows = append(rows, parquetDoc{ID: i, Content: &s})
	}
	rows = append(rows, parquetDoc{ID: -1}) // a null text
	pq := filepath.Join(dir, "e.parquet")
	if err := parquet.WriteFile(pq, rows, parquet.PageBufferSize(4096)); err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(ps.positive))
	for _, tc := range []struct {
		path, field string
	}{
		{jsonl, "text"},
		{filepath.Join(dir, "gz"), "text"},
		{filepath.Join(dir, "*.zst"), "text"},
		{filepath.Join(dir, "d.txt"), ""},
		{pq, "content"},
	} {
		r := scanPaths(t, ix, Options{TextField: tc.field}, tc.path)
		if got := flagged(r); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: flagged %d items, want the %d planted", tc.path, len(got), len(want))
		}
		if tc.path == pq && (r.Train[0].NoText != 1 || r.Train[0].Records != int64(len(ps.corpus)+1)) {
			t.Errorf("parquet: %+v, want %d records and one without text", r.Train[0], len(ps.corpus)+1)
		}
		for _, it := range r.Items {
			if strings.HasSuffix(tc.path, ".parquet") != (it.First.Row > 0) {
				t.Errorf("%s: %s located at %+v", tc.path, it.ID, it.First)
			}
		}
	}
}

func TestShardsMergeToTheWholeScan(t *testing.T) {
	t.Parallel()
	ps := planted(t)
	ix, _ := NewIndex(ps.items, DefaultN)
	dir := t.TempDir()
	for i := range 4 {
		writeJSONL(t, filepath.Join(dir, fmt.Sprintf("part-%d.jsonl", i)), ps.corpus[i*32:(i+1)*32])
	}
	whole := scanPaths(t, ix, Options{Workers: 2}, dir)
	var shards []*Report
	for i := 1; i <= 3; i++ {
		shards = append(shards, scanPaths(t, ix, Options{ShardIndex: i, ShardCount: 3}, dir))
	}
	merged, err := Merge(ix, shards)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(merged.Items, whole.Items) || !reflect.DeepEqual(merged.Summary, whole.Summary) || merged.Words != whole.Words {
		t.Errorf("merged shards differ from the whole scan:\n%+v\n%+v", merged.Summary, whole.Summary)
	}
	if _, err := Merge(ix, []*Report{shards[0], shards[0]}); err == nil || !strings.Contains(err.Error(), "in two reports") {
		t.Errorf("merging a shard twice: %v", err)
	}
	other, _ := NewIndex(ps.items[:100], DefaultN)
	if _, err := Merge(other, shards); err == nil || !strings.Contains(err.Error(), "other test items") {
		t.Errorf("merging against another index: %v", err)
	}
}

func TestResumeSkipsFinishedFiles(t *testing.T) {
	t.Parallel()
	ps := planted(t)
	ix, _ := NewIndex(ps.items, DefaultN)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	os.MkdirAll(data, 0o755)
	for i := range 4 {
		writeJSONL(t, filepath.Join(data, fmt.Sprintf("part-%d.jsonl", i)), ps.corpus[i*32:(i+1)*32])
	}
	state := filepath.Join(dir, "scan.state")
	whole := scanPaths(t, ix, Options{State: state, Workers: 1}, data)
	// Keep two finished files and half of a third line, as a kill leaves it.
	lines := strings.SplitAfter(string(must(os.ReadFile(state))), "\n")
	os.WriteFile(state, []byte(lines[0]+lines[1]+lines[2][:len(lines[2])/2]), 0o644)
	var progress bytes.Buffer
	resumed := scanPaths(t, ix, Options{State: state, Resume: true, Workers: 1, Progress: &progress}, data)
	if !strings.Contains(progress.String(), "resuming: 2 of 4 files already scanned") {
		t.Errorf("progress %q does not say it resumed", progress.String())
	}
	if !reflect.DeepEqual(resumed.Items, whole.Items) || !reflect.DeepEqual(resumed.Train, whole.Train) {
		t.Errorf("resumed scan differs from the whole scan")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestBadInputIsNamed(t *testing.T) {
	t.Parallel()
	ix, _ := NewIndex([]Item{{Test: "probes", ID: "a", Text: "one two three four five six"}}, DefaultN)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"text\":\"fine\"}\n{\"text\": 3}\n"), 0o644)
	inputs, _, _ := LocalInputs([]string{bad})
	if _, err := Scan(context.Background(), ix, inputs, Options{}); err == nil || !strings.Contains(err.Error(), "bad.jsonl line 2") {
		t.Errorf("non-string text: %v", err)
	}
	os.WriteFile(bad, []byte("{\"text\":\"fine\"}\nnot json\n"), 0o644)
	if _, err := Scan(context.Background(), ix, inputs, Options{}); err == nil || !strings.Contains(err.Error(), "bad.jsonl line 2") {
		t.Errorf("malformed line: %v", err)
	}
	pq := filepath.Join(dir, "x.parquet")
	parquet.WriteFile(pq, []parquetDoc{{ID: 1}})
	inputs, _, _ = LocalInputs([]string{pq})
	if _, err := Scan(context.Background(), ix, inputs, Options{}); err == nil || !strings.Contains(err.Error(), `no column "text" (columns: id, content)`) {
		t.Errorf("missing column: %v", err)
	}
	if _, _, err := LocalInputs([]string{filepath.Join(dir, "x.csv")}); err == nil {
		t.Error("missing file accepted")
	}
	os.WriteFile(filepath.Join(dir, "x.csv"), nil, 0o644)
	if _, _, err := LocalInputs([]string{filepath.Join(dir, "x.csv")}); err == nil || !strings.Contains(err.Error(), "unknown kind of file") {
		t.Errorf("csv: %v", err)
	}
	if _, err := NewIndex([]Item{{Test: "a", ID: "1"}, {Test: "a", ID: "1"}}, DefaultN); err == nil {
		t.Error("duplicate item accepted")
	}
}

// jsonLines are JSON Lines records whose "text" field the fast and the
// streaming readers must both decode as encoding/json does.
var jsonLines = []string{
	`{"text":"plain"}`,
	`{"id": 3, "meta": {"text": "nested", "a": [1, {"b": "}"}]}, "text": "after \"escapes\" \u00e9\n"}`,
	`{"text2": "x", "te\u0078t": "escaped key"}`,
	`{"text": "tab\t nl\n cr\r bs\\ sl\/ q\" b\b f\f \u00e9 \ud83d\ude00 lone \ud800 x \udc00"}`,
	` { "a" : null , "b" : true , "text" : "" } `,
	`{"a": "no text"}`,
	`{"a": 1.5e3, "b": [true, false, null], "textual": "no"}`,
	`{}`,
}

func TestJSONFieldAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, line := range jsonLines {
		var want map[string]any
		if err := json.Unmarshal([]byte(line), &want); err != nil {
			t.Fatal(err)
		}
		var scratch []byte
		gotb, ok, err := jsonField([]byte(line), "text", &scratch)
		got := string(gotb)
		w, wok := want["text"].(string)
		if err != nil || ok != wok || got != w {
			t.Errorf("jsonField(%s) = %q, %v, %v; want %q, %v", line, got, ok, err, w, wok)
		}
	}
	for _, bad := range []string{`[1]`, `{"text": 3}`, `{"text": "open`, `{"a" 1}`, `not json`} {
		if _, _, err := jsonField([]byte(bad), "text", new([]byte)); err == nil {
			t.Errorf("jsonField(%s): no error", bad)
		}
	}
}
