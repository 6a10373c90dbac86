package goldentest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// numbered is n lines "line i", with the lines in change replaced.
func numbered(n int, change map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := change[i]; ok {
			b.WriteString(s + "\n")
		} else {
			fmt.Fprintf(&b, "line %d\n", i)
		}
	}
	return b.String()
}

func TestDiff(t *testing.T) {
	t.Parallel()
	base := numbered(40, nil)
	tests := []struct {
		name     string
		a, b     string
		want     []string // lines of the diff, in this order
		hunks    int
		maxLines int // 0: no bound
	}{
		{"equal", base, base, nil, 0, 0},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", []string{"--- want", "+++ got", "@@ -1 +1 @@", " a", "-b", "+B", " c"}, 1, 0},
		{"a line added at the end", "a\n", "a\nb\n", []string{"@@ -1 +1 @@", " a", "+b"}, 1, 0},
		{"no final newline", "a\n", "a", []string{" a", `+\ no newline at the end`}, 1, 0},
		{"far apart: two hunks, the middle left out", base, numbered(40, map[int]string{5: "five", 35: "thirty-five"}),
			[]string{"@@ -2 +2 @@", " line 4", "-line 5", "+five", " line 6", "@@ -32 +32 @@", "-line 35", "+thirty-five"}, 2, 20},
		{"close: one hunk", base, numbered(40, map[int]string{5: "five", 9: "nine"}), []string{"+five", " line 6", " line 8", "+nine"}, 1, 0},
	}
	for _, tt := range tests {
		got := Diff("want", "got", []byte(tt.a), []byte(tt.b))
		if tt.hunks == 0 {
			if got != "" {
				t.Errorf("%s: %q, want no diff", tt.name, got)
			}
			continue
		}
		if n := strings.Count(got, "\n@@ "); n != tt.hunks {
			t.Errorf("%s: %d hunks, want %d:\n%s", tt.name, n, tt.hunks, got)
		}
		rest := "\n" + got
		for _, w := range tt.want {
			k := strings.Index(rest, "\n"+w+"\n")
			if k < 0 {
				t.Errorf("%s: no line %q (in this order) in\n%s", tt.name, w, got)
				break
			}
			rest = rest[k+1+len(w):]
		}
		if n := strings.Count(got, "\n"); tt.maxLines > 0 && n > tt.maxLines {
			t.Errorf("%s: %d lines:\n%s", tt.name, n, got)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "out.golden")
	Check(t, path, []byte("one\ntwo\n"), true) // -update writes it
	if b, err := os.ReadFile(path); err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("update wrote %q, %v", b, err)
	}
	Check(t, path, []byte("one\ntwo\n"), false)
	ft := &fakeT{TB: t}
	Check(ft, path, []byte("one\n2\n"), false)
	if !strings.Contains(ft.msg, " one\n-two\n+2\n") {
		t.Errorf("a difference: %q, want the diff", ft.msg)
	}
}

// fakeT records an error instead of failing the test.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.msg += fmt.Sprintf(format, args...)
}
