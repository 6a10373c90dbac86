// Package atomicfile writes a file through a temporary file in the same
// directory, synced and renamed into place: a reader never sees half a file,
// and a failed write leaves neither the file nor the temporary behind. It is
// the one way udgam-ci writes a file other than an appended run file.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File is a file being written in place of a path. It is a temporary file
// in the path's directory (so the rename cannot cross file systems) until
// Commit renames it there. Write through the embedded *os.File (it may be
// read back and seeked, as a GGUF writer needs), but do not Close it.
type File struct {
	*os.File
	path string
	done bool
}

// Create starts writing path. Defer Discard right after it, so that every
// failed path removes the temporary file; after Commit, Discard does
// nothing.
func Create(path string) (*File, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &File{File: tmp, path: path}, nil
}

// Commit makes the written bytes the file at path: mode 0644 (CreateTemp
// makes 0600), synced to disk before the rename so a crash never leaves a
// renamed but empty file, then closed and renamed. On any error the
// temporary file is removed.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("write %s: already committed or discarded", f.path)
	}
	err := f.Chmod(0o644)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), f.path)
	}
	f.done = true
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	return nil
}

// Discard closes and removes the temporary file unless Commit has renamed
// it; the path keeps whatever it held before.
func (f *File) Discard() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	os.Remove(f.Name())
}

// Write writes a whole file at once through write.
func Write(path string, write func(io.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	defer f.Discard()
	if err := write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}
