package structure

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// enginePatchName is a patch's file name: its place in the order, then
// what it does.
var enginePatchName = regexp.MustCompile(`^([0-9]{4})-[a-z0-9-]+\.patch$`)

// engineListed matches a line of scripts/engine.sh's header that lists a
// patch: "#   0001 what it does".
var engineListed = regexp.MustCompile(`(?m)^#   ([0-9]{4}) \S`)

// patchHeaderProblems says what is wrong with a patch file's text: it must
// open with a paragraph saying why, and nothing in that paragraph may read
// to patch(1) as the start of a diff.
func patchHeaderProblems(text string) []string {
	head, _, found := strings.Cut("\n"+text, "\ndiff --git a/")
	if !found {
		return []string{"no diff (no line starting \"diff --git a/\")"}
	}
	var problems []string
	if strings.TrimSpace(head) == "" {
		problems = append(problems, "no header saying why before its diff")
	}
	// Element 0 of the split is the "\n" put before the text, so i is the
	// line's number in the file.
	for i, line := range strings.Split(head, "\n") {
		for _, start := range []string{"--- ", "+++ ", "*** ", "@@ ", "Index:", "diff ", "Prereq:"} {
			if strings.HasPrefix(line, start) {
				problems = append(problems, fmt.Sprintf("header line %d starts with %q, which patch(1) reads as a diff", i, start))
			}
		}
	}
	return problems
}

// enginePatchProblems checks the patches' names against engine.sh's list:
// numbered from 0001 without a gap, each listed once, none listed that is
// not there.
func enginePatchProblems(names []string, engineSh string) []string {
	var problems, numbers []string
	for _, n := range names {
		m := enginePatchName.FindStringSubmatch(n)
		if m == nil {
			problems = append(problems, fmt.Sprintf("%s: want NNNN-name.patch", n))
			continue
		}
		numbers = append(numbers, m[1])
	}
	slices.Sort(numbers)
	for i, n := range numbers {
		if want := fmt.Sprintf("%04d", i+1); n != want {
			problems = append(problems, fmt.Sprintf("patch %s where %s comes next: number them in order without gaps or repeats", n, want))
			break
		}
	}
	var listed []string
	for _, m := range engineListed.FindAllStringSubmatch(engineSh, -1) {
		listed = append(listed, m[1])
	}
	for _, n := range numbers {
		if !slices.Contains(listed, n) {
			problems = append(problems, fmt.Sprintf("scripts/engine.sh's header does not list patch %s (\"#   %s what it does\")", n, n))
		}
	}
	for _, n := range listed {
		if !slices.Contains(numbers, n) {
			problems = append(problems, fmt.Sprintf("scripts/engine.sh's header lists patch %s, which is not in scripts/engine/patches", n))
		}
	}
	return problems
}

// TestEnginePatches: every edit to llama.cpp is a numbered patch a
// reviewer reads as a diff under a header saying why, and engine.sh's
// header lists each in one line. (That each applies is make
// check-patches's job: it needs the module and patch(1).)
func TestEnginePatches(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "scripts", "engine", "patches")
	files, err := filepath.Glob(filepath.Join(dir, "*.patch"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no patches in %s", dir)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range patchHeaderProblems(string(b)) {
			t.Errorf("%s: %s", f, p)
		}
	}
	engineSh, err := os.ReadFile(filepath.Join("..", "..", "scripts", "engine.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range enginePatchProblems(names, string(engineSh)) {
		t.Error(p)
	}
}

// TestEnginePatchProblems: the checks above fail on what they are for.
func TestEnginePatchProblems(t *testing.T) {
	t.Parallel()
	const diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
	const sh = "#!/bin/sh\n#   0001 one\n#   0002 two\nset -e\n"
	tests := []struct {
		name        string
		patch       string
		files       []string
		engineSh    string
		wantProblem string // "" for none
	}{
		{"in step", "Why.\n\n" + diff, []string{"0001-a.patch", "0002-b.patch"}, sh, ""},
		{"no header", diff, []string{"0001-a.patch", "0002-b.patch"}, sh, "no header"},
		{"header reads as a diff", "Why.\n--- here\n\n" + diff, []string{"0001-a.patch", "0002-b.patch"}, sh, "reads as a diff"},
		{"no diff", "Why.\n", []string{"0001-a.patch", "0002-b.patch"}, sh, "no diff"},
		{"not listed", "Why.\n\n" + diff, []string{"0001-a.patch", "0002-b.patch", "0003-c.patch"}, sh, "does not list patch 0003"},
		{"listed, not there", "Why.\n\n" + diff, []string{"0001-a.patch"}, sh, "lists patch 0002"},
		{"gap", "Why.\n\n" + diff, []string{"0001-a.patch", "0003-c.patch"}, "#   0001 one\n#   0003 three\n", "patch 0003 where 0002"},
		{"repeat", "Why.\n\n" + diff, []string{"0001-a.patch", "0001-b.patch"}, "#   0001 one\n", "patch 0001 where 0002"},
		{"unnumbered", "Why.\n\n" + diff, []string{"0001-a.patch", "0002-b.patch", "fix.patch"}, sh, "want NNNN-name.patch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := strings.Join(append(patchHeaderProblems(tt.patch), enginePatchProblems(tt.files, tt.engineSh)...), "; ")
			switch {
			case tt.wantProblem == "" && got != "":
				t.Errorf("problems %q, want none", got)
			case tt.wantProblem != "" && !strings.Contains(got, tt.wantProblem):
				t.Errorf("problems %q, want one containing %q", got, tt.wantProblem)
			}
		})
	}
}
