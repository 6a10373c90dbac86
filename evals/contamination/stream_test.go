package contamination

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Records longer than the line buffer are scanned in pieces: what they
// match, and where, is what a brute-force reading of the whole records
// finds, in JSON Lines (the text field streamed through its escapes) and
// in plain text (one line a record).
func TestLongRecordsAgreeWithBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	vocab := vocabulary(rng, 12)
	const n = 6
	items := randomItems(rng, vocab, 300)
	var corpus []string
	for range 2 {
		// Several pieces each, with "é" (two bytes) and escapes (\n, \")
		// falling on piece boundaries somewhere.
		doc := strings.ReplaceAll(randomText(rng, vocab, 280_000), "- ", "é \"")
		corpus = append(corpus, doc)
	}
	if len(corpus[0]) < 2*lineBuffer {
		t.Fatalf("records of %d bytes do not cross the %d-byte buffer", len(corpus[0]), lineBuffer)
	}
	ix, err := NewIndex(items, n)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "long.jsonl")
	writeJSONL(t, jsonl, corpus)
	// Plain text runs n-grams on across lines: n words no item has end
	// each line, so that what spans two is what brute force reads apart.
	var txt bytes.Buffer
	for _, doc := range corpus {
		txt.WriteString(strings.ReplaceAll(doc, "\n", " ") + strings.Repeat(" zzqxj", n) + "\n")
	}
	plain := filepath.Join(dir, "long.txt")
	os.WriteFile(plain, txt.Bytes(), 0o644)
	want := bruteForce(items, corpus, n)
	if len(want) < 50 {
		t.Fatalf("only %d items match by brute force", len(want))
	}
	for _, path := range []string{jsonl, plain} {
		r := scanPaths(t, ix, Options{}, path)
		got := map[string][]int32{}
		for _, it := range r.Items {
			got[it.ID] = it.Positions
			rec := corpus[max(it.First.Line, 1)-1]
			if path == plain {
				rec = strings.ReplaceAll(rec, "\n", " ")
			}
			first := Words(it.First.Text)
			if len(first) == 0 || !strings.HasPrefix(rec[it.First.Offset:], first[0]) { // the vocabulary is lower case
				t.Errorf("%s: item %s first seen at line %d byte %d %q; the record there reads %q", path, it.ID, it.First.Line, it.First.Offset, it.First.Text, rec[it.First.Offset:min(len(rec), it.First.Offset+40)])
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the scan finds %d items, brute force %d", path, len(got), len(want))
		}
		words := len(Words(txt.String()))
		if path == jsonl {
			words = 0
			for _, doc := range corpus {
				words += len(Words(doc))
			}
		}
		if r.Words != int64(words) {
			t.Errorf("%s: scanned %d words, want %d", path, r.Words, words)
		}
	}
}

// streamField decodes what jsonField decodes, through a reader far smaller
// than the line.
func TestStreamFieldAgreesWithJSONField(t *testing.T) {
	t.Parallel()
	for _, line := range jsonLines {
		var scratch []byte
		want, wok, werr := jsonField([]byte(line), "text", &scratch)
		var got []byte
		ok, err := streamField(bufio.NewReaderSize(strings.NewReader(line+"\n"), 16), "text", func(p []byte) { got = append(got, p...) })
		if err != nil || werr != nil || ok != wok || string(got) != string(want) {
			t.Errorf("streamField(%s) = %q, %v, %v; jsonField %q, %v, %v", line, got, ok, err, want, wok, werr)
		}
	}
	for _, bad := range []string{`[1]`, `{"text": 3}`, `{"text": "open`, `{"a" 1}`, `not json`, `{"a": "x" "b"}`, `{"text": "bad \q"}`} {
		if _, err := streamField(bufio.NewReaderSize(strings.NewReader(bad+"\n"), 16), "text", func([]byte) {}); err == nil {
			t.Errorf("streamField(%s): no error", bad)
		}
	}
}

// Memory does not grow with the longest record: a 48 MB record is scanned
// with a few MB of heap (the whole line used to be held, and more).
func TestLongRecordMemoryIsBounded(t *testing.T) {
	// Not parallel: it reads the process's heap.
	ix, _ := NewIndex([]Item{{Test: "probes", ID: "a", Text: "alpha beta gamma delta epsilon zeta"}}, DefaultN)
	dir := t.TempDir()
	for _, tc := range []struct{ name, before, after string }{
		{"one.jsonl", `{"id": 1, "text": "`, `"}` + "\n"},
		{"one.txt", "", "\n"},
	} {
		// The record goes straight to the file: held in memory it would
		// be live heap, and the collector lets garbage grow in proportion
		// to what is live, which is what this test measures.
		path := filepath.Join(dir, tc.name)
		size := writeLongRecord(t, path, tc.before, tc.after)
		inputs, _, _ := LocalInputs([]string{path})
		defer debug.SetGCPercent(debug.SetGCPercent(10))
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		var peak atomic.Uint64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > peak.Load() {
					peak.Store(ms.HeapAlloc)
				}
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
			}
		}()
		r, err := Scan(context.Background(), ix, inputs, Options{Workers: 1})
		close(stop)
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Items) != 1 {
			t.Errorf("%s: the item at the end of the record was not found: %+v", tc.name, r.Items)
		}
		grew := int64(peak.Load()) - int64(base.HeapAlloc)
		t.Logf("%s: a %d MB record grew the heap by at most %.1f MB", tc.name, size>>20, float64(grew)/(1<<20))
		if grew > 16<<20 {
			t.Errorf("%s: the heap grew by %d MB scanning a %d MB record; want under 16 MB", tc.name, grew>>20, size>>20)
		}
	}
}

// writeLongRecord writes before, 48 MB of prose ending in the planted
// item's words, and after to path, and returns the file's size.
func writeLongRecord(t *testing.T, path, before, after string) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(before)
	const filler = "lorem ipsum dolor sit amet consectetur "
	for n := 0; n < 48<<20; n += len(filler) {
		w.WriteString(filler)
	}
	w.WriteString("Alpha, beta; gamma delta epsilon zeta.")
	w.WriteString(after)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// A compressed file cut short says so, naming the file, instead of
// surfacing as malformed JSON.
func TestTruncatedStreamIsNamed(t *testing.T) {
	t.Parallel()
	ix, _ := NewIndex([]Item{{Test: "probes", ID: "a", Text: "one two three four five six"}}, DefaultN)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := vocabulary(rng, 50)
	var texts []string
	for range 2000 {
		texts = append(texts, randomText(rng, vocab, 50))
	}
	writeJSONL(t, filepath.Join(dir, "raw.jsonl"), texts)
	raw := must(os.ReadFile(filepath.Join(dir, "raw.jsonl")))
	for _, tc := range []struct {
		name  string
		write func(*testing.T, string, []byte)
		kind  string
	}{{"cut.jsonl.gz", writeGzip, "gzip"}, {"cut.jsonl.zst", writeZstd, "zstd"}, {"cut.txt.gz", writeGzip, "gzip"}} {
		path := filepath.Join(dir, tc.name)
		tc.write(t, path, raw)
		whole := must(os.ReadFile(path))
		os.WriteFile(path, whole[:len(whole)/2], 0o644)
		inputs, _, _ := LocalInputs([]string{path})
		_, err := Scan(context.Background(), ix, inputs, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), "truncated "+tc.kind+" stream") {
			t.Errorf("%s: %v; want a truncated %s stream named", tc.name, err, tc.kind)
		}
	}
}

// A binary file under a text name is refused, naming it; bytes that are
// not UTF-8 are counted, with the first line that holds one.
func TestBinaryAndInvalidUTF8(t *testing.T) {
	t.Parallel()
	ix, _ := NewIndex([]Item{{Test: "probes", ID: "a", Text: "one two three four five six"}}, DefaultN)
	dir := t.TempDir()
	bin := filepath.Join(dir, "image.txt")
	b := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	copy(b, "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	os.WriteFile(bin, b, 0o644)
	binJSON := filepath.Join(dir, "nul.jsonl")
	os.WriteFile(binJSON, []byte("{\"text\": \"ok\"}\n{\"text\": \"a\x00b\"}\n"), 0o644)
	for _, p := range []string{bin, binJSON} {
		inputs, _, _ := LocalInputs([]string{p})
		if _, err := Scan(context.Background(), ix, inputs, Options{}); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "binary data") {
			t.Errorf("%s: %v; want binary data refused, naming the file", p, err)
		}
	}
	latin1 := filepath.Join(dir, "latin1.txt")
	os.WriteFile(latin1, []byte("plain line\ncaf\xe9 cr\xe8me\nna\xefve\n"), 0o644)
	r := scanPaths(t, ix, Options{}, latin1)
	if tf := r.Train[0]; tf.InvalidUTF8 != 3 || tf.InvalidUTF8First != 2 {
		t.Errorf("latin-1 text: %d bytes not UTF-8, first at line %d; want 3 and 2", tf.InvalidUTF8, tf.InvalidUTF8First)
	}
	warnings, err := r.CheckRead(false, false)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "latin1.txt: 3 bytes are not UTF-8, first at line 2") {
		t.Errorf("warnings %q, %v", warnings, err)
	}
}

// Records without the text field, and a scan that read no text, are
// errors unless allowed, naming the file, the first line and how many.
func TestCheckRefusesUnreadText(t *testing.T) {
	t.Parallel()
	ix, _ := NewIndex([]Item{{Test: "probes", ID: "a", Text: "one two three four five six"}}, DefaultN)
	dir := t.TempDir()
	var other bytes.Buffer
	for i := range 2000 {
		line, _ := json.Marshal(map[string]any{"id": i, "content": "one two three four five six"})
		other.Write(append(line, '\n'))
	}
	content := filepath.Join(dir, "content.jsonl")
	os.WriteFile(content, other.Bytes(), 0o644)
	mixed := filepath.Join(dir, "mixed.jsonl")
	os.WriteFile(mixed, []byte("{\"text\": \"some words here\"}\n{\"body\": \"x\"}\n{\"text\": \"more\"}\n{\"body\": \"y\"}\n"), 0o644)
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)

	r := scanPaths(t, ix, Options{}, content)
	_, err := r.CheckRead(false, false)
	if err == nil || !strings.Contains(err.Error(), `content.jsonl: 2,000 of 2,000 records have no text in "text", first at line 1`) {
		t.Errorf("text under another field: %v", err)
	}
	if w, err := r.CheckRead(true, true); err != nil || len(w) != 1 {
		t.Errorf("allowed: %q, %v", w, err)
	}
	if _, err := r.CheckRead(true, false); err == nil || !strings.Contains(err.Error(), "read no text") {
		t.Errorf("allowed missing, but no text read: %v", err)
	}

	r = scanPaths(t, ix, Options{}, mixed)
	if _, err := r.CheckRead(false, false); err == nil || !strings.Contains(err.Error(), `mixed.jsonl: 2 of 4 records have no text in "text", first at line 2`) {
		t.Errorf("some records without text: %v", err)
	}
	if w, err := r.CheckRead(true, false); err != nil || len(w) != 1 || !strings.Contains(w[0], "2 of 4 records") {
		t.Errorf("allowed: %q, %v", w, err)
	}

	r = scanPaths(t, ix, Options{}, empty)
	if _, err := r.CheckRead(false, false); err == nil || !strings.Contains(err.Error(), "read no text") || !strings.Contains(err.Error(), "1 training file") {
		t.Errorf("empty input: %v", err)
	}
	if _, err := r.CheckRead(false, true); err != nil {
		t.Errorf("empty input allowed: %v", err)
	}
}
