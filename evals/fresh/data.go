// Package fresh scores the Fresh Text test: each document on its own,
// read through sliding windows so that every token is scored exactly once,
// and bits per byte as total bits over total UTF-8 bytes.
package fresh

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/internal/atomicfile"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Document is one text to score. Only ID and Text are required.
type Document struct {
	ID      string `json:"id" parquet:"id,optional"`
	Text    string `json:"text" parquet:"text,optional"`
	Source  string `json:"source,omitempty" parquet:"source,optional"`
	URL     string `json:"url,omitempty" parquet:"url,optional"`
	License string `json:"license,omitempty" parquet:"license,optional"`
	Date    string `json:"date,omitempty" parquet:"date,optional"`
}

// Data is a validated set of documents and its identity for the header.
type Data struct {
	Docs    []Document
	Dataset runfile.Dataset
}

// maxProblems bounds how many bad lines one error lists.
const maxProblems = 20

// LoadFile reads and validates documents from a .jsonl or .parquet file.
// The dataset's sha256 is that of the file's bytes; its name is the file's
// base name (callers may rename it, e.g. to the hub reference).
func LoadFile(path string) (*Data, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read documents: %w", err)
	}
	var docs []Document
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".jsonl", ".json", ".ndjson":
		docs, err = parseJSONL(b, path)
	case ".parquet":
		docs, err = parseParquet(b, path)
	default:
		return nil, fmt.Errorf("read documents %s: unknown extension %q (want .jsonl or .parquet)", path, ext)
	}
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		// Scoring nothing would print 0 bits per byte, which reads as a score.
		return nil, fmt.Errorf("read documents %s: no documents", path)
	}
	return newData(docs, filepath.Base(path), b), nil
}

// Load reads the documents a run names: "" is the embedded smoke sample,
// hf://OWNER/NAME@REV[/path] is fetched by fetch (the hub client), and
// anything else is a local file.
func Load(ref string, fetch func(ref string) (evals.Fetched, error)) (*Data, error) {
	switch {
	case ref == "":
		return Smoke()
	case strings.HasPrefix(ref, "hf://"):
		if fetch == nil {
			return nil, fmt.Errorf("documents %s: this build cannot fetch from the Hugging Face hub", ref)
		}
		f, err := fetch(ref)
		if err != nil {
			return nil, fmt.Errorf("documents %s: %w", ref, err)
		}
		d, err := LoadFile(f.Path)
		if err != nil {
			return nil, err
		}
		d.Dataset.Name, d.Dataset.Revision = f.Name, f.Revision
		return d, nil
	}
	return LoadFile(ref)
}

func newData(docs []Document, name string, raw []byte) *Data {
	sum := sha256.Sum256(raw)
	return &Data{
		Docs:    docs,
		Dataset: runfile.Dataset{Name: name, SHA256: hex.EncodeToString(sum[:]), Count: len(docs)},
	}
}

// WriteJSONL writes docs to path as the JSON Lines LoadFile reads, through a
// temporary file, so a failed write leaves no partial file under the name.
func WriteJSONL(path string, docs []Document) error {
	return atomicfile.Write(path, func(f io.Writer) error {
		w := bufio.NewWriter(f)
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, d := range docs {
			if err := enc.Encode(d); err != nil {
				return fmt.Errorf("%s: %w", d.ID, err)
			}
		}
		return w.Flush()
	})
}

// jsonDoc tells a missing id or text from an empty one.
type jsonDoc struct {
	ID      *string `json:"id"`
	Text    *string `json:"text"`
	Source  string  `json:"source"`
	URL     string  `json:"url"`
	License string  `json:"license"`
	Date    string  `json:"date"`
}

// parseJSONL reads JSON Lines; blank lines are skipped. Every problem is
// reported by line, up to maxProblems, and nothing is returned when there
// is one.
func parseJSONL(b []byte, name string) ([]Document, error) {
	var docs []Document
	var lines []int
	var problems []error
	add := func(err error) { problems = append(problems, err) }
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), runfile.MaxLine)
	n := 0
	for sc.Scan() && len(problems) < maxProblems {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if !utf8.Valid(line) {
			add(fmt.Errorf("%s line %d: invalid UTF-8", name, n))
			continue
		}
		var j jsonDoc
		dec := json.NewDecoder(bytes.NewReader(line))
		if err := dec.Decode(&j); err != nil {
			add(fmt.Errorf("%s line %d: malformed JSON: %v", name, n, err))
			continue
		}
		if dec.More() {
			add(fmt.Errorf("%s line %d: malformed JSON: more than one value on the line", name, n))
			continue
		}
		d := Document{Source: j.Source, URL: j.URL, License: j.License, Date: j.Date}
		if j.ID != nil {
			d.ID = *j.ID
		}
		if j.Text != nil {
			d.Text = *j.Text
		}
		docs = append(docs, d)
		lines = append(lines, n)
	}
	if err := sc.Err(); err != nil {
		add(fmt.Errorf("%s line %d: %w", name, n+1, err))
	}
	problems = append(problems, validate(docs, name, func(i int) string { return fmt.Sprintf("line %d", lines[i]) })...)
	return docs, joinProblems(problems)
}

func parseParquet(b []byte, name string) ([]Document, error) {
	docs, err := parquet.Read[Document](bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("read documents %s: %w", name, err)
	}
	return docs, joinProblems(validate(docs, name, func(i int) string { return fmt.Sprintf("row %d", i+1) }))
}

// validate checks what scoring relies on: an id, unique; text that is not
// empty and is valid UTF-8 (its byte count is the denominator of bpb).
func validate(docs []Document, name string, where func(i int) string) []error {
	var problems []error
	first := map[string]string{}
	for i := range docs {
		if len(problems) >= maxProblems {
			break
		}
		d := &docs[i]
		at := name + " " + where(i)
		switch {
		case d.ID == "":
			problems = append(problems, fmt.Errorf("%s: document has no id", at))
		case first[d.ID] != "":
			problems = append(problems, fmt.Errorf("%s: duplicate id %q (first at %s)", at, d.ID, first[d.ID]))
		case d.Text == "":
			problems = append(problems, fmt.Errorf("%s: document %q has empty text", at, d.ID))
		case !utf8.ValidString(d.Text):
			problems = append(problems, fmt.Errorf("%s: document %q: text is not valid UTF-8", at, d.ID))
		case !utf8.ValidString(d.ID) || !utf8.ValidString(d.Source):
			problems = append(problems, fmt.Errorf("%s: document %q: id or source is not valid UTF-8", at, d.ID))
		}
		if d.ID != "" && first[d.ID] == "" {
			first[d.ID] = where(i)
		}
	}
	return problems
}

func joinProblems(problems []error) error {
	if len(problems) == 0 {
		return nil
	}
	if len(problems) >= maxProblems {
		problems = append(problems[:maxProblems], fmt.Errorf("(stopped after %d problems)", maxProblems))
	}
	return fmt.Errorf("invalid documents, nothing scored:\n%w", errors.Join(problems...))
}
