package contamination

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
)

// Input is one training file to scan.
type Input struct {
	Path   string // as shown in reports: a local path or hf://OWNER/NAME@SHA/path
	Size   int64  // bytes on disk, for progress
	Format string // "jsonl", "parquet" or "text"
	// Compression is "", "gzip" or "zstd" (not for Parquet, which
	// compresses inside the file).
	Compression string
	// open returns the file and what to do when done with it; for hub
	// datasets it downloads the shard first and removes it after.
	open func(ctx context.Context) (*os.File, func(), error)
}

// classify reads a file name: its format and compression, or ok=false.
func classify(name string) (format, compression string, ok bool) {
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, ".gz"):
		compression, lower = "gzip", strings.TrimSuffix(lower, ".gz")
	case strings.HasSuffix(lower, ".zst"):
		compression, lower = "zstd", strings.TrimSuffix(lower, ".zst")
	case strings.HasSuffix(lower, ".zstd"):
		compression, lower = "zstd", strings.TrimSuffix(lower, ".zstd")
	}
	switch filepath.Ext(lower) {
	case ".jsonl", ".ndjson", ".json":
		return "jsonl", compression, true
	case ".parquet":
		return "parquet", compression, compression == ""
	case ".txt", ".text", ".md":
		return "text", compression, true
	}
	return "", "", false
}

// LocalInputs expands paths, directories (recursively) and globs into the
// files to scan, sorted within each argument. A named file of an unknown
// kind is an error; in a directory such files are skipped and listed.
func LocalInputs(args []string) (inputs []Input, skipped []string, err error) {
	seen := map[string]bool{}
	add := func(p string, size int64) {
		if seen[p] {
			return
		}
		seen[p] = true
		format, comp, _ := classify(p)
		path := p
		inputs = append(inputs, Input{Path: p, Size: size, Format: format, Compression: comp,
			open: func(context.Context) (*os.File, func(), error) {
				f, err := os.Open(path)
				if err != nil {
					return nil, nil, err
				}
				return f, func() { f.Close() }, nil
			}})
	}
	for _, arg := range args {
		matches := []string{arg}
		if strings.ContainsAny(arg, "*?[") {
			if matches, err = filepath.Glob(arg); err != nil {
				return nil, nil, fmt.Errorf("training data %s: %w", arg, err)
			}
			if len(matches) == 0 {
				return nil, nil, fmt.Errorf("training data %s: no file matches", arg)
			}
		}
		for _, m := range matches {
			st, err := os.Stat(m)
			if err != nil {
				return nil, nil, fmt.Errorf("training data: %w", err)
			}
			if !st.IsDir() {
				if _, _, ok := classify(m); !ok {
					return nil, nil, fmt.Errorf("training data %s: unknown kind of file (want .jsonl, .parquet or .txt, optionally .gz or .zst; Parquet uncompressed outside)", m)
				}
				add(m, st.Size())
				continue
			}
			var files []string
			err = filepath.WalkDir(m, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() {
					return nil
				}
				if _, _, ok := classify(p); !ok {
					skipped = append(skipped, p)
					return nil
				}
				files = append(files, p)
				return nil
			})
			if err != nil {
				return nil, nil, fmt.Errorf("training data %s: %w", m, err)
			}
			slices.Sort(files)
			for _, f := range files {
				st, err := os.Stat(f)
				if err != nil {
					return nil, nil, fmt.Errorf("training data: %w", err)
				}
				add(f, st.Size())
			}
		}
	}
	if len(inputs) == 0 {
		return nil, skipped, errors.New("training data: no files to scan")
	}
	return inputs, skipped, nil
}

// maxRecord bounds one line of a scan's state file.
const maxRecord = 256 << 20

// reader decompresses an opened file as its Input says.
func (in *Input) reader(f *os.File) (io.Reader, func(), error) {
	switch in.Compression {
	case "gzip":
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: gzip: %w", in.Path, err)
		}
		return z, func() { z.Close() }, nil
	case "zstd":
		z, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: zstd: %w", in.Path, err)
		}
		return z, z.Close, nil
	}
	return f, func() {}, nil
}

// jsonField extracts the string value of a top-level key from one JSON
// object without decoding the rest of the line, which is where the time of
// a scan would otherwise go. The value is a view into line, or into
// *scratch when it holds escapes: valid until either is reused. Other values are skipped by their structure
// (strings, brackets), not validated. ok is false when the key is absent.
func jsonField(line []byte, key string, scratch *[]byte) ([]byte, bool, error) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return nil, false, errors.New("not a JSON object")
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return nil, false, nil
	}
	for {
		if i >= len(line) || line[i] != '"' {
			return nil, false, fmt.Errorf("malformed JSON at byte %d", i)
		}
		end, escaped := stringEnd(line, i)
		if end < 0 {
			return nil, false, errors.New("malformed JSON: unterminated string")
		}
		k := line[i+1 : end]
		match := string(k) == key
		if escaped { // rare: compare the decoded key
			var dk string
			if err := json.Unmarshal(line[i:end+1], &dk); err != nil {
				return nil, false, err
			}
			match = dk == key
		}
		i = skipSpace(line, end+1)
		if i >= len(line) || line[i] != ':' {
			return nil, false, fmt.Errorf("malformed JSON at byte %d: want ':'", i)
		}
		i = skipSpace(line, i+1)
		if match {
			if i >= len(line) || line[i] != '"' {
				return nil, false, fmt.Errorf("field %q is not a string", key)
			}
			end, escaped := stringEnd(line, i)
			if end < 0 {
				return nil, false, errors.New("malformed JSON: unterminated string")
			}
			if !escaped {
				return line[i+1 : end], true, nil
			}
			v, err := unescape((*scratch)[:0], line[i+1:end])
			*scratch = v
			if err != nil {
				return nil, false, fmt.Errorf("field %q: %w", key, err)
			}
			return v, true, nil
		}
		var err error
		if i, err = skipValue(line, i); err != nil {
			return nil, false, err
		}
		i = skipSpace(line, i)
		if i < len(line) && line[i] == ',' {
			i = skipSpace(line, i+1)
			continue
		}
		if i < len(line) && line[i] == '}' {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("malformed JSON at byte %d: want ',' or '}'", i)
	}
}

// unescape appends the decoded inside of a JSON string to out, as
// encoding/json decodes it (invalid surrogates become U+FFFD).
func unescape(out, b []byte) ([]byte, error) {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(b) {
			return out, errors.New("malformed JSON: escape at end of string")
		}
		if d, ok := simpleEscape(b[i]); ok {
			out = append(out, d)
			continue
		}
		if b[i] != 'u' {
			return out, fmt.Errorf("malformed JSON: bad escape \\%c", b[i])
		}
		r, n, ok := unicodeEscape(b[i+1:])
		if !ok {
			return out, errors.New(`malformed JSON: bad \u escape`)
		}
		i += n
		out = utf8.AppendRune(out, r)
	}
	return out, nil
}

// simpleEscape is what JSON's one-letter escape \c stands for.
func simpleEscape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// unicodeEscape decodes the four hex digits after \u at the start of b,
// joining the low surrogate \uXXXX that may follow, as encoding/json does
// (an invalid surrogate becomes U+FFFD); n is how many bytes of b it used.
func unicodeEscape(b []byte) (r rune, n int, ok bool) {
	if r, ok = hex4(b); !ok {
		return 0, 0, false
	}
	if !utf16.IsSurrogate(r) {
		return r, 4, true
	}
	r2, ok2 := rune(-1), false
	if len(b) >= 6 && b[4] == '\\' && b[5] == 'u' {
		r2, ok2 = hex4(b[6:])
	}
	if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
		return dec, 10, true
	}
	return utf8.RuneError, 4, true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the index of the quote closing the string that starts
// at b[i], and whether it holds escapes; -1 when it is not closed.
func stringEnd(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j, escaped
		}
	}
	return -1, escaped
}

// skipValue returns the index just past the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return i, errors.New("malformed JSON: value missing")
	}
	switch b[i] {
	case '"':
		end, _ := stringEnd(b, i)
		if end < 0 {
			return i, errors.New("malformed JSON: unterminated string")
		}
		return end + 1, nil
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := stringEnd(b, j)
				if end < 0 {
					return j, errors.New("malformed JSON: unterminated string")
				}
				j = end
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return len(b), errors.New("malformed JSON: unclosed object or array")
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ' ' && b[j] != '\t' && b[j] != '\r' && b[j] != '\n' {
		j++
	}
	if j == i {
		return i, fmt.Errorf("malformed JSON at byte %d", i)
	}
	return j, nil
}

// parquetColumn calls fn with each row's value of the named column.
func parquetColumn(f *os.File, name, column string, fn func(row int, text string, null bool)) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	leaf, ok := pf.Schema().Lookup(column)
	if !ok {
		return fmt.Errorf("%s: no column %q (columns: %s)", name, column, strings.Join(columnNames(pf.Schema()), ", "))
	}
	if leaf.Node.Type().Kind() != parquet.ByteArray {
		return fmt.Errorf("%s: column %q holds %s, not text", name, column, leaf.Node.Type())
	}
	row := 0
	buf := make([]parquet.Value, 1024)
	for _, rg := range pf.RowGroups() {
		pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
		for {
			p, err := pages.ReadPage()
			if err == io.EOF {
				break
			}
			if err != nil {
				pages.Close()
				return fmt.Errorf("%s row %d: %w", name, row+1, err)
			}
			vr := p.Values()
			for {
				k, err := vr.ReadValues(buf)
				for _, v := range buf[:k] {
					row++
					fn(row, string(v.ByteArray()), v.IsNull())
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					pages.Close()
					return fmt.Errorf("%s row %d: %w", name, row+1, err)
				}
			}
			parquet.Release(p)
		}
		pages.Close()
	}
	return nil
}

func columnNames(s *parquet.Schema) []string {
	var out []string
	for _, path := range s.Columns() {
		out = append(out, strings.Join(path, "."))
	}
	return out
}
