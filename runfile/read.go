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
	header := false // the first line that is not blank is the header
	seen := map[string]int{}
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if !header {
			if err := decodeValid(b, &run.Header, false, "header"); err != nil {
				return nil, fmt.Errorf("%s line %d: %w", name, line, err)
			}
			header = true
			continue
		}
		var id string
		switch run.Header.Test {
		case TestFresh:
			var d Doc
			if err := decodeValid(b, &d, true, "not a fresh record"); err != nil {
				return nil, fmt.Errorf("%s line %d: %w", name, line, err)
			}
			id = d.ID
			run.Docs = append(run.Docs, d)
		case TestProbes:
			var it Item
			if err := decodeValid(b, &it, true, "not a probes record"); err != nil {
				return nil, fmt.Errorf("%s line %d: %w", name, line, err)
			}
			id = it.ID
			if it.Variant != "" {
				run.Variants = append(run.Variants, it)
			} else {
				run.Items = append(run.Items, it)
			}
		}
		if run.Len() > MaxRecords {
			return nil, fmt.Errorf("%s line %d: over %d records, the most one run may hold", name, line, MaxRecords)
		}
		if prev, ok := seen[id]; ok {
			return nil, fmt.Errorf("%s line %d: record %q repeats line %d", name, line, id, prev)
		}
		seen[id] = line
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s line %d: %w", name, line+1, err)
	}
	if !header {
		return nil, fmt.Errorf("%s: empty run file (no header)", name)
	}
	return run, nil
}

// decodeValid decodes one line into v and validates it: what names the
// line in a decoding error; a validation error says what it refuses.
func decodeValid(b []byte, v interface{ Validate() error }, refuseUnknown bool, what string) error {
	if err := decodeStrict(b, v, refuseUnknown); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return v.Validate()
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
