// Package goldentest compares a test's output with its golden file and,
// when they differ, prints what changed as a line diff, not the whole
// output (gofmt's golden tests are the model). Tests only.
package goldentest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check compares got with the file at path, or rewrites the file when
// update is set (each package's -update flag). A difference fails the test
// with a diff from the file to got.
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test -run '%s' -update rewrites it, if the change is meant):\n%s",
			path, t.Name(), Diff(path, "got", want, got))
	}
}

// context is how many unchanged lines a diff shows around a change.
const context = 3

// Diff is a unified diff of the lines of a (named aname) to those of b
// (bname); "" when they are equal. The lines are matched by their longest
// common subsequence, which golden files are small enough for.
func Diff(aname, bname string, a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	x, y := lines(a), lines(b)
	// lcs[i][j] is the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-' or '+'
		text string
		ai   int // line of a (1-based) this op is at or before
		bi   int
	}
	var ops []op
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, op{' ', x[i], i + 1, j + 1})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', x[i], i + 1, j + 1}) // what was, before what is
			i++
		default:
			ops = append(ops, op{'+', y[j], i + 1, j + 1})
			j++
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aname, bname)
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		// A hunk: the changes from k on, joined while fewer than
		// 2*context unchanged lines separate them, with context around.
		start := max(0, k-context)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				break
			}
			end = run
		}
		stop := min(len(ops), end+context)
		fmt.Fprintf(&out, "@@ -%d +%d @@\n", ops[start].ai, ops[start].bi)
		for _, o := range ops[start:stop] {
			fmt.Fprintf(&out, "%c%s\n", o.kind, o.text)
		}
		k = stop
	}
	return out.String()
}

// lines splits s into lines, a missing final newline shown as such.
func lines(s []byte) []string {
	text := string(s)
	var out []string
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n\\ no newline at the end"
	}
	for _, l := range strings.SplitAfter(text, "\n") {
		if l != "" {
			out = append(out, strings.TrimSuffix(l, "\n"))
		}
	}
	return out
}
