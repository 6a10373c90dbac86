package fresh

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/udgamlabs/udgam-ci/evals"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadJSONL(t *testing.T) {
	t.Parallel()
	content := `{"id":"a","text":"Grüße","source":"wiki","url":"https://x/a","license":"CC BY-SA 4.0","date":"2026-10-01"}

{"id":"b","text":"plain","extra":"ignored"}
`
	p := writeFile(t, "docs.jsonl", content)
	d, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	if d.Dataset.Name != "docs.jsonl" || d.Dataset.SHA256 != hex.EncodeToString(sum[:]) || d.Dataset.Count != 2 || d.Dataset.Smoke {
		t.Errorf("dataset %+v", d.Dataset)
	}
	want := Document{ID: "a", Text: "Grüße", Source: "wiki", URL: "https://x/a", License: "CC BY-SA 4.0", Date: "2026-10-01"}
	if d.Docs[0] != want || d.Docs[1] != (Document{ID: "b", Text: "plain"}) {
		t.Errorf("docs %+v", d.Docs)
	}
}

// WriteJSONL writes what LoadFile reads back unchanged, text that JSON
// would escape included, and a failed write leaves no file.
func TestWriteJSONLRoundTrips(t *testing.T) {
	t.Parallel()
	docs := []Document{
		{ID: "a", Text: "<b>Grüße</b> & \"quotes\"\n\ttab", Source: "wiki", URL: "https://x/a?b=1&c=2", Date: "2026-10-01"},
		{ID: "b", Text: "plain"},
	}
	p := filepath.Join(t.TempDir(), "docs.jsonl")
	if err := WriteJSONL(p, docs); err != nil {
		t.Fatal(err)
	}
	d, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Docs, docs) {
		t.Errorf("read back %+v, wrote %+v", d.Docs, docs)
	}
	missing := filepath.Join(t.TempDir(), "no such folder", "docs.jsonl")
	if err := WriteJSONL(missing, docs); err == nil {
		t.Errorf("writing into a missing folder succeeded")
	}
}

func TestLoadRejectsBadDocuments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, content, want string
	}{
		{"empty text", `{"id":"a","text":"x"}` + "\n" + `{"id":"b","text":""}`, `bad.jsonl line 2: document "b" has empty text`},
		{"missing text", `{"id":"a"}`, `bad.jsonl line 1: document "a" has empty text`},
		{"missing id", `{"text":"x"}`, "bad.jsonl line 1: document has no id"},
		{"duplicate id", `{"id":"a","text":"x"}` + "\n\n" + `{"id":"a","text":"y"}`, `bad.jsonl line 3: duplicate id "a" (first at line 1)`},
		{"malformed", `{"id":"a","text":"x"}` + "\n" + `{"id":"b","text":`, "bad.jsonl line 2: malformed JSON"},
		{"two values", `{"id":"a","text":"x"} {"id":"b","text":"y"}`, "bad.jsonl line 1: malformed JSON: more than one value"},
		{"number id", `{"id":7,"text":"x"}`, "bad.jsonl line 1: malformed JSON"},
		{"invalid utf-8", "{\"id\":\"a\",\"text\":\"ab\xffc\"}", "bad.jsonl line 1: invalid UTF-8"},
		{"escaped invalid utf-8", `{"id":"a","text":"ab\udc00"}`, ""}, // JSON decodes a lone surrogate to U+FFFD: valid
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadFile(writeFile(t, "bad.jsonl", tt.content))
			if tt.want == "" {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := LoadFile(writeFile(t, "docs.csv", "id,text")); err == nil || !strings.Contains(err.Error(), "unknown extension") {
		t.Errorf("csv: %v", err)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "nope.jsonl")); err == nil || !strings.Contains(err.Error(), "nope.jsonl") {
		t.Errorf("missing file: %v", err)
	}
}

func TestLoadReportsEveryBadLine(t *testing.T) {
	t.Parallel()
	_, err := LoadFile(writeFile(t, "bad.jsonl", `{"id":"a","text":""}`+"\n"+`{"id":"b","text":""}`))
	if err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error %v, want both lines named", err)
	}
}

// pqDoc is a writer's row with only some optional columns and an extra one.
type pqDoc struct {
	ID     string `parquet:"id"`
	Text   string `parquet:"text"`
	Source string `parquet:"source"`
	Words  int64  `parquet:"words"`
}

func TestLoadParquet(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "docs.parquet")
	if err := parquet.WriteFile(p, []pqDoc{{"a", "naïve", "arxiv", 1}, {"b", "text", "", 1}}); err != nil {
		t.Fatal(err)
	}
	d, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Docs) != 2 || d.Docs[0] != (Document{ID: "a", Text: "naïve", Source: "arxiv"}) || d.Dataset.Count != 2 {
		t.Errorf("parquet docs %+v", d.Docs)
	}
	if err := parquet.WriteFile(p, []pqDoc{{"a", "x", "", 0}, {"a", "y", "", 0}, {"c", "bad\xff", "", 0}}); err != nil {
		t.Fatal(err)
	}
	_, err = LoadFile(p)
	if err == nil || !strings.Contains(err.Error(), `docs.parquet row 2: duplicate id "a"`) || !strings.Contains(err.Error(), "row 3: document \"c\": text is not valid UTF-8") {
		t.Errorf("bad parquet: %v", err)
	}
	if _, err := LoadFile(writeFile(t, "junk.parquet", "not parquet")); err == nil || !strings.Contains(err.Error(), "junk.parquet") {
		t.Errorf("junk parquet: %v", err)
	}
}

func TestLoadRefs(t *testing.T) {
	t.Parallel()
	local := writeFile(t, "hub.jsonl", `{"id":"a","text":"x"}`)
	var asked string
	fetch := func(ref string) (evals.Fetched, error) {
		asked = ref
		return evals.Fetched{Path: local, Name: "udgam/fresh-text/test.jsonl", Revision: "abc123"}, nil
	}
	d, err := Load("hf://udgam/fresh-text@abc123", fetch)
	if err != nil {
		t.Fatal(err)
	}
	if asked != "hf://udgam/fresh-text@abc123" || d.Dataset.Name != "udgam/fresh-text/test.jsonl" || d.Dataset.Revision != "abc123" || d.Dataset.Count != 1 {
		t.Errorf("hub ref: asked %q, dataset %+v", asked, d.Dataset)
	}
	failing := func(string) (evals.Fetched, error) { return evals.Fetched{}, errors.New("offline") }
	if _, err := Load("hf://a/b@c", failing); err == nil || !strings.Contains(err.Error(), "hf://a/b@c: offline") {
		t.Errorf("fetch failure: %v", err)
	}
	if _, err := Load("hf://a/b@c", nil); err == nil || !strings.Contains(err.Error(), "cannot fetch") {
		t.Errorf("no fetcher: %v", err)
	}
	d, err = Load(local, nil)
	if err != nil || d.Dataset.Name != "hub.jsonl" || d.Dataset.Revision != "" {
		t.Errorf("local: %+v %v", d, err)
	}
}

func TestSmokeSample(t *testing.T) {
	t.Parallel()
	d, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Dataset.Smoke || !strings.Contains(d.Dataset.Name, "smoke") || len(d.Docs) < 25 || d.Dataset.Count != len(d.Docs) {
		t.Errorf("smoke dataset %+v with %d docs", d.Dataset, len(d.Docs))
	}
	sources := map[string]bool{}
	long, multiByte := 0, 0
	for _, doc := range d.Docs {
		sources[doc.Source] = true
		if len(doc.Text) > 2048 {
			long++
		}
		if utf8.RuneCountInString(doc.Text) < len(doc.Text) {
			multiByte++
		}
		if !strings.Contains(doc.License, "CC0") {
			t.Errorf("%s has licence %q", doc.ID, doc.License)
		}
	}
	if len(sources) < 4 || long < 3 || multiByte < 5 {
		t.Errorf("smoke sample: %d sources, %d documents over 2 KB, %d with multi-byte text", len(sources), long, multiByte)
	}
}

func TestGenerateDocs(t *testing.T) {
	t.Parallel()
	a, b := GenerateDocs(1, 50, 100, 40000), GenerateDocs(1, 50, 100, 40000)
	short, long := 0, 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different document %d", i)
		}
		if n := len(a[i].Text); n < 100 || n > 40000+20 || !utf8.ValidString(a[i].Text) {
			t.Errorf("document %d: %d bytes", i, n)
		}
		if a[i].Source == "short" {
			short++
		} else {
			long++
		}
	}
	if short < 10 || long < 10 {
		t.Errorf("%d short and %d long documents: want a mix", short, long)
	}
}
