package runfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/udgamlabs/udgam-ci/internal/atomicfile"
)

// Writer appends records to a run file. Each record is one write of one
// whole line followed by fsync, so a kill loses at most the records in
// flight and never leaves a record half in the file for long: a torn last
// line is cut off by Resume.
type Writer struct {
	f    *os.File
	path string
}

// Create starts a new run file with its header. It refuses to overwrite an
// existing file so a finished run is never lost by a repeated command.
func Create(path string, h Header) (*Writer, error) {
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("create run %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create run %s: file exists (use --resume to continue it, or remove it)", path)
		}
		return nil, fmt.Errorf("create run %s: %w", path, err)
	}
	w := &Writer{f: f, path: path}
	if err := w.Append(h); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Resume reopens a run file for appending. The stored header must match h
// in everything that changes results (ResumeMismatch); a torn last line is
// cut off. It returns the records already there.
func Resume(path string, h Header) (*Writer, *Run, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("resume run %s: %w", path, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("resume run %s: %w", path, err)
	}
	whole := data
	if i := bytes.LastIndexByte(data, '\n'); i < len(data)-1 {
		whole = data[:i+1] // drop the torn tail (i == -1 drops everything)
	}
	run, err := Read(bytes.NewReader(whole), path)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	if diffs := ResumeMismatch(run.Header, h); len(diffs) > 0 {
		f.Close()
		return nil, nil, fmt.Errorf("resume run %s: the file was made with other settings: %s", path, FormatDiffs(diffs))
	}
	if len(whole) != len(data) {
		if err := f.Truncate(int64(len(whole))); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("resume run %s: cut torn line: %w", path, err)
		}
	}
	if _, err := f.Seek(int64(len(whole)), io.SeekStart); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("resume run %s: %w", path, err)
	}
	return &Writer{f: f, path: path}, run, nil
}

// Append writes one record (or the header) as one line and syncs it.
func (w *Writer) Append(v any) error {
	b, err := Marshal(v)
	if err != nil {
		return fmt.Errorf("write run %s: %w", w.path, err)
	}
	b = append(b, '\n')
	if _, err := w.f.Write(b); err != nil {
		return fmt.Errorf("write run %s: %w", w.path, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync run %s: %w", w.path, err)
	}
	return nil
}

// Close closes the file.
func (w *Writer) Close() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close run %s: %w", w.path, err)
	}
	return nil
}

// WriteFile writes a whole run atomically, for tools that produce a run at
// once, such as merge.
func WriteFile(path string, r *Run) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Encode(w, r) })
}

// Marshal encodes one line of a run file (without its newline). HTML
// characters are kept as they are: json.Marshal would write '<' as six
// bytes, so a stored or re-encoded run could outgrow MaxLine.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// Encode writes r as JSON Lines, encoded as Marshal does.
func Encode(w io.Writer, r *Run) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r.Header); err != nil {
		return err
	}
	for i := range r.Docs {
		if err := enc.Encode(&r.Docs[i]); err != nil {
			return err
		}
	}
	for _, items := range [][]Item{r.Items, r.Variants} {
		for i := range items {
			if err := enc.Encode(&items[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
