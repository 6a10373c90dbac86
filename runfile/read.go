package runfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"unicode/utf8"
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

// bom is the UTF-8 byte order mark some Windows editors put first in a
// file: it is not data, so a run file may start with one (and loses it).
var bom = []byte{0xEF, 0xBB, 0xBF}

// Options bound what Read takes beyond the format's own limits.
type Options struct {
	// MaxRecords refuses a run with more records, at the first one over
	// (before the rest is read); 0 means the format's MaxRecords.
	MaxRecords int
	// Limit names what MaxRecords is, for its error ("this server compares
	// runs of up to 100,000 records").
	Limit string
}

// Read parses a run from r; name is used in errors. A last line without a
// newline is accepted only if it parses whole (a killed writer may leave a
// torn line: that is an error here; resume handles it).
func Read(r io.Reader, name string) (*Run, error) { return ReadWith(r, name, Options{}) }

// ReadWith is Read with a tighter bound on the records. Lines that are
// not UTF-8, or over MaxLine, and a line that repeats a key are refused:
// JSON decoding would otherwise rewrite the bytes to U+FFFD or keep the
// last value, and what is stored would differ from what was sent.
func ReadWith(r io.Reader, name string, opt Options) (*Run, error) {
	maxRecords := MaxRecords
	if opt.MaxRecords > 0 && opt.MaxRecords < maxRecords {
		maxRecords = opt.MaxRecords
	}
	limit := opt.Limit
	if limit == "" {
		limit = "the most one run may hold"
	}
	// A failed read hands the scanner's last, partial line over as if it
	// were whole: the read error, not that line's, is what happened.
	src := &errReader{r: r}
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	run, line, err := read(sc, name, maxRecords, limit)
	if src.err != nil {
		return nil, fmt.Errorf("%s line %d: %w", name, max(line, 1), src.err)
	}
	return run, err
}

// errReader keeps the first error other than io.EOF its reader gave.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && e.err == nil {
		e.err = err
	}
	return n, err
}

// read parses the lines of sc; it returns the line it stopped at.
func read(sc *bufio.Scanner, name string, maxRecords int, limit string) (*Run, int, error) {
	run := &Run{}
	line := 0
	header := false // the first line that is not blank is the header
	seen := map[string]int{}
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, bom)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		if !utf8.Valid(b) {
			return nil, line, fmt.Errorf("%s line %d: not valid UTF-8 (byte %d): run files are UTF-8 JSON", name, line, invalidUTF8At(b)+1)
		}
		what, as := "header", reflect.TypeFor[Header]()
		if header {
			what, as = "record", reflect.TypeFor[Doc]()
			if run.Header.Test == TestProbes {
				as = reflect.TypeFor[Item]()
			}
		}
		if err := checkKeys(b, as); err != nil {
			return nil, line, fmt.Errorf("%s line %d: %s: %w", name, line, what, err)
		}
		if !header {
			if err := decodeValid(b, &run.Header, false, "header"); err != nil {
				return nil, line, fmt.Errorf("%s line %d: %w", name, line, err)
			}
			header = true
			continue
		}
		var id string
		switch run.Header.Test {
		case TestFresh:
			var d Doc
			if err := decodeValid(b, &d, true, "not a fresh record"); err != nil {
				return nil, line, fmt.Errorf("%s line %d: %w", name, line, err)
			}
			id = d.ID
			run.Docs = append(run.Docs, d)
		case TestProbes:
			var it Item
			if err := decodeValid(b, &it, true, "not a probes record"); err != nil {
				return nil, line, fmt.Errorf("%s line %d: %w", name, line, err)
			}
			id = it.ID
			if it.Variant != "" {
				run.Variants = append(run.Variants, it)
			} else {
				run.Items = append(run.Items, it)
			}
		}
		if run.Len() > maxRecords {
			return nil, line, &TooManyError{Name: name, Line: line, Max: maxRecords, Limit: limit}
		}
		if prev, ok := seen[id]; ok {
			return nil, line, fmt.Errorf("%s line %d: record %q repeats line %d", name, line, id, prev)
		}
		seen[id] = line
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, line, fmt.Errorf("%s line %d: longer than the limit of %d bytes (16 MiB) for one line: %w", name, line+1, MaxLine, err)
		}
		return nil, line, fmt.Errorf("%s line %d: %w", name, line+1, err)
	}
	if !header {
		return nil, line, fmt.Errorf("%s: empty run file (no header)", name)
	}
	return run, line, nil
}

// TooManyError is a run with more records than a reader takes.
type TooManyError struct {
	Name  string
	Line  int
	Max   int
	Limit string
}

func (e *TooManyError) Error() string {
	return fmt.Sprintf("%s line %d: over %d records, %s", e.Name, e.Line, e.Max, e.Limit)
}

// invalidUTF8At is the offset of the first byte of b that is not UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// decodeValid decodes one line into v and validates it: what names the
// line in a decoding error; a validation error says what it refuses.
func decodeValid(b []byte, v interface{ Validate() error }, refuseUnknown bool, what string) error {
	if err := decodeOne(b, v, refuseUnknown); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return v.Validate()
}
