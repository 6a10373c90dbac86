package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entries lists dir, so a test sees any temporary file left behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	if err := Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "new" {
		t.Fatalf("read back %q, %v", b, err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", st.Mode().Perm(), err)
	}
	if got := entries(t, dir); len(got) != 1 || got[0] != "out.json" {
		t.Errorf("directory holds %q, want only out.json", got)
	}
}

// TestFailedWritesLeaveNothing: every way a write can fail leaves no file
// (or the old one, untouched) and no temporary file.
func TestFailedWritesLeaveNothing(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		old  bool // a file is already at the path
		do   func(p string) error
		want string
	}{
		{"write fails", false, func(p string) error {
			return Write(p, func(w io.Writer) error { io.WriteString(w, "half"); return boom })
		}, "boom"},
		{"write fails over an old file", true, func(p string) error {
			return Write(p, func(w io.Writer) error { io.WriteString(w, "half"); return boom })
		}, "boom"},
		{"discarded without commit", true, func(p string) error {
			f, err := Create(p)
			if err != nil {
				return err
			}
			io.WriteString(f, "half")
			f.Discard()
			return boom
		}, "boom"},
		{"rename fails", false, func(p string) error {
			// A non-empty directory at the path: the rename must fail.
			if err := os.MkdirAll(filepath.Join(p, "x"), 0o755); err != nil {
				return err
			}
			return Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "whole"); return err })
		}, "write "},
		{"committed twice", false, func(p string) error {
			f, err := Create(p)
			if err != nil {
				return err
			}
			defer f.Discard()
			io.WriteString(f, "old")
			if err := f.Commit(); err != nil {
				return err
			}
			return f.Commit()
		}, "already committed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "model.gguf")
			if tc.old {
				if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := tc.do(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if tc.want != "boom" && !strings.Contains(err.Error(), p) {
				t.Errorf("error %v does not name %s", err, p)
			}
			for _, name := range entries(t, dir) {
				if name != "model.gguf" {
					t.Errorf("left behind %s", name)
				}
			}
			st, serr := os.Stat(p)
			switch {
			case tc.old || tc.name == "committed twice":
				if b, err := os.ReadFile(p); err != nil || string(b) != "old" {
					t.Errorf("the old file reads %q, %v; want it untouched", b, err)
				}
			case tc.name == "rename fails":
				if serr != nil || !st.IsDir() {
					t.Errorf("the directory at the path: %v", serr)
				}
			default:
				if !errors.Is(serr, os.ErrNotExist) {
					t.Errorf("a file is at the path after a failed write: %v", serr)
				}
			}
		})
	}
}

func TestCreateInAMissingDirectory(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "no", "such", "out")
	if err := Write(p, func(io.Writer) error { return nil }); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("error %v, want one naming %s", err, p)
	}
}
