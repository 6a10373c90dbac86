package probes

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/hub"
)

// coreJSONL is the default item set: Generate with the core types, 100 a
// level and seed 2026. A test regenerates it and requires equal bytes.
//
//go:embed data/core-2026.jsonl
var coreJSONL []byte

// CoreName names the embedded set in run headers.
const CoreName = "udgam-probes core (generated, seed 2026)"

// Set is a loaded item file with what a run header records about it.
type Set struct {
	Name     string // file path, hub reference or CoreName
	Revision string // the hub commit, when from the hub
	SHA256   string // of the file's bytes
	Items    []Item
}

// Core returns the embedded default set.
func Core() (*Set, error) {
	items, err := decodeJSONL(bytes.NewReader(coreJSONL), "embedded "+CoreName)
	if err != nil {
		return nil, err
	}
	return &Set{Name: CoreName, SHA256: sha256Hex(coreJSONL), Items: items}, nil
}

// Load reads the items a run names: "" is the embedded core set,
// hf://OWNER/NAME@REV[/path] is fetched by fetch (the hub client), and
// anything else is a local file: fresh.Load's shape.
func Load(ref string, fetch func(ref string) (evals.Fetched, error)) (*Set, error) {
	switch {
	case ref == "":
		return Core()
	case hub.IsRef(ref):
		if fetch == nil {
			return nil, fmt.Errorf("load items %s: this build cannot fetch from the Hugging Face hub", ref)
		}
		f, err := fetch(ref)
		if err != nil {
			return nil, fmt.Errorf("load items %s: %w", ref, err)
		}
		set, err := LoadFile(f.Path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
		set.Name, set.Revision = f.Name, f.Revision
		return set, nil
	}
	return LoadFile(ref)
}

// LoadFile reads items from a local JSON Lines or Parquet file (by
// extension) and validates them. Errors name the file and the line (JSONL)
// or the id (Parquet).
func LoadFile(path string) (*Set, error) {
	if hub.IsRef(path) {
		return nil, fmt.Errorf("load items %s: a hub reference needs Load", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load items: %w", err)
	}
	var items []Item
	if strings.HasSuffix(strings.ToLower(path), ".parquet") {
		items, err = decodeParquet(data, path)
	} else {
		items, err = decodeJSONL(bytes.NewReader(data), path)
	}
	if err != nil {
		return nil, err
	}
	return &Set{Name: path, SHA256: sha256Hex(data), Items: items}, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// jsonItem accepts an answer written as a JSON number as well as a string,
// since numeric answers are often written bare.
type jsonItem struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Level   int             `json:"level"`
	Prompt  string          `json:"prompt"`
	Answer  json.RawMessage `json:"answer"`
	Choices []string        `json:"choices"`
}

func decodeJSONL(r io.Reader, name string) ([]Item, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var items []Item
	ids := map[string]int{}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		it, err := parseJSONItem(b)
		if err == nil {
			err = it.Validate()
		}
		if err == nil {
			if prev, ok := ids[it.ID]; ok {
				err = fmt.Errorf("duplicate id %q (first on line %d)", it.ID, prev)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, line, err)
		}
		ids[it.ID] = line
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s line %d: %w", name, line+1, err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no items", name)
	}
	return items, nil
}

func parseJSONItem(b []byte) (Item, error) {
	var j jsonItem
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&j); err != nil {
		return Item{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Item{}, errors.New("invalid JSON: trailing data after the item")
	}
	it := Item{ID: j.ID, Type: j.Type, Level: j.Level, Prompt: j.Prompt, Choices: j.Choices}
	var s string
	var n json.Number
	switch {
	case len(j.Answer) == 0 || string(j.Answer) == "null":
		return Item{}, fmt.Errorf("item %q has no answer", j.ID)
	case json.Unmarshal(j.Answer, &s) == nil:
		it.Answer = s
	case json.Unmarshal(j.Answer, &n) == nil:
		it.Answer = n.String()
	default:
		return Item{}, fmt.Errorf("item %q: answer %s is neither a string nor a number", j.ID, j.Answer)
	}
	return it, nil
}

// parquetItem is the column layout of a Parquet item file.
type parquetItem struct {
	ID      string   `parquet:"id"`
	Type    string   `parquet:"type"`
	Level   int64    `parquet:"level"`
	Prompt  string   `parquet:"prompt"`
	Answer  string   `parquet:"answer"`
	Choices []string `parquet:"choices,list"`
}

func decodeParquet(data []byte, name string) ([]Item, error) {
	rows, err := parquet.Read[parquetItem](bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%s: read parquet: %w", name, err)
	}
	items := make([]Item, len(rows))
	seen := map[string]bool{}
	for i, r := range rows {
		it := Item{ID: r.ID, Type: r.Type, Level: int(r.Level), Prompt: r.Prompt, Answer: r.Answer, Choices: r.Choices}
		if err := it.Validate(); err != nil {
			return nil, fmt.Errorf("%s row %d (id %q): %w", name, i+1, r.ID, err)
		}
		if seen[it.ID] {
			return nil, fmt.Errorf("%s row %d: duplicate id %q", name, i+1, it.ID)
		}
		seen[it.ID] = true
		items[i] = it
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no items", name)
	}
	return items, nil
}

// Validate checks what the scorer relies on.
func (it *Item) Validate() error {
	switch {
	case it.ID == "":
		return errors.New("item has no id")
	case strings.TrimSpace(it.Prompt) == "":
		return fmt.Errorf("item %s: empty prompt", it.ID)
	case len(it.Choices) < 2:
		return fmt.Errorf("item %s: %d choices, want at least 2", it.ID, len(it.Choices))
	case hasDuplicate(it.Choices):
		return fmt.Errorf("item %s: duplicate choices %q", it.ID, it.Choices)
	case !slices.Contains(it.Choices, it.Answer):
		return fmt.Errorf("item %s: answer %q is not among the choices %q", it.ID, it.Answer, it.Choices)
	}
	return nil
}
