package contamination

import (
	"bufio"
	"bytes"
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

// maxRecord bounds one JSON line or text line.
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

// lines calls fn with each line (without its newline) and its number.
func lines(r io.Reader, name string, fn func(n int, line []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var long []byte
	n := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			if len(long) > maxRecord {
				return fmt.Errorf("%s line %d: longer than %d bytes", name, n+1, maxRecord)
			}
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if len(line) > 0 {
			n++
			if e := fn(n, bytes.TrimSuffix(line, []byte("\n"))); e != nil {
				return e
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s line %d: %w", name, n+1, err)
		}
	}
}

// jsonField extracts the string value of a top-level key from one JSON
// object without decoding the rest, which is where the time of a scan
// would go. ok is false when the key is absent. Lines that are not a JSON
// object are an error.
func jsonField(line []byte, key string) (string, bool, error) {
	d := json.NewDecoder(bytes.NewReader(line))
	tok, err := d.Token()
	if err != nil {
		return "", false, err
	}
	if tok != json.Delim('{') {
		return "", false, errors.New("not a JSON object")
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return "", false, err
		}
		if k != key {
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return "", false, err
			}
			continue
		}
		var v any
		if err := d.Decode(&v); err != nil {
			return "", false, err
		}
		s, isString := v.(string)
		if !isString {
			return "", false, fmt.Errorf("field %q is %T, not a string", key, v)
		}
		return s, true, nil
	}
	return "", false, nil
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
