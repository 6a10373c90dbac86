package runfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLine bounds one line of a run file; a probe record is far below it.
const MaxLine = 16 << 20

// ReadFile reads and validates a whole run file.
func ReadFile(path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", path, err)
	}
	defer f.Close()
	r, err := Read(f, path)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Read parses a run from r; name is used in errors. A last line without a
// newline is accepted only if it parses whole (a killed writer may leave a
// torn line: that is an error here; resume handles it).
func Read(r io.Reader, name string) (*Run, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	run := &Run{}
	line := 0
	seen := map[string]int{}
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if line == 1 {
			if err := decodeStrict(b, &run.Header, false); err != nil {
				return nil, fmt.Errorf("%s line 1: header: %w", name, err)
			}
			if err := run.Header.Validate(); err != nil {
				return nil, fmt.Errorf("%s line 1: %w", name, err)
			}
			continue
		}
		var id string
		switch run.Header.Test {
		case TestFresh:
			var d Doc
			if err := decodeStrict(b, &d, true); err != nil {
				return nil, fmt.Errorf("%s line %d: not a fresh record: %w", name, line, err)
			}
			if err := d.Validate(); err != nil {
				return nil, fmt.Errorf("%s line %d: %w", name, line, err)
			}
			id = d.ID
			run.Docs = append(run.Docs, d)
		case TestProbes:
			var it Item
			if err := decodeStrict(b, &it, true); err != nil {
				return nil, fmt.Errorf("%s line %d: not a probes record: %w", name, line, err)
			}
			if err := it.Validate(); err != nil {
				return nil, fmt.Errorf("%s line %d: %w", name, line, err)
			}
			id = it.ID
			run.Items = append(run.Items, it)
		}
		if prev, ok := seen[id]; ok {
			return nil, fmt.Errorf("%s line %d: record %q repeats line %d", name, line, id, prev)
		}
		seen[id] = line
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s line %d: %w", name, line+1, err)
	}
	if line == 0 {
		return nil, fmt.Errorf("%s: empty run file (no header)", name)
	}
	return run, nil
}

// decodeStrict decodes one JSON value and refuses trailing data, so two
// records glued on one line are an error rather than half a record. Records
// also refuse unknown fields, so an item is never read as an empty document.
func decodeStrict(b []byte, v any, refuseUnknown bool) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if refuseUnknown {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("invalid JSON: trailing data after the record")
	}
	return nil
}

// Validate checks what every reader relies on.
func (h *Header) Validate() error {
	if h.Schema != Schema {
		return fmt.Errorf("schema is %q, want %q", h.Schema, Schema)
	}
	if h.ID == "" {
		return errors.New("header has no run id")
	}
	if h.Test != TestFresh && h.Test != TestProbes {
		return fmt.Errorf("test is %q, want %q or %q", h.Test, TestFresh, TestProbes)
	}
	return nil
}

// Validate checks one document record.
func (d *Doc) Validate() error {
	switch {
	case d.ID == "":
		return errors.New("document record has no id")
	case d.Bytes < 0 || d.Tokens < 0 || d.Windows < 0:
		return fmt.Errorf("document %s: negative count", d.ID)
	case d.Bits < 0 || d.Bits != d.Bits:
		return fmt.Errorf("document %s: bits %v is not a non-negative number", d.ID, d.Bits)
	}
	return nil
}

// Validate checks one item record.
func (it *Item) Validate() error {
	switch {
	case it.ID == "":
		return errors.New("item record has no id")
	case len(it.Logprobs) < 2:
		return fmt.Errorf("item %s: %d choices, want at least 2", it.ID, len(it.Logprobs))
	case it.Pred < 0 || it.Pred >= len(it.Logprobs):
		return fmt.Errorf("item %s: pred %d out of range", it.ID, it.Pred)
	case it.Answer < 0 || it.Answer >= len(it.Logprobs):
		return fmt.Errorf("item %s: answer %d out of range", it.ID, it.Answer)
	case it.Correct != (it.Pred == it.Answer):
		return fmt.Errorf("item %s: correct=%v disagrees with pred %d and answer %d", it.ID, it.Correct, it.Pred, it.Answer)
	}
	return nil
}
