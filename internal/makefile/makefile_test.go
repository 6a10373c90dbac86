// Package makefile tests the Makefile's own rules (it has no code).
package makefile

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rule returns the lines of the Makefile's rule for target, with the
// comment and variable lines right above it.
func rule(t *testing.T, target string) string {
	t.Helper()
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, target+":") {
			continue
		}
		start := i
		for start > 0 && lines[start-1] != "" {
			start--
		}
		end := i + 1
		for end < len(lines) && strings.HasPrefix(lines[end], "\t") {
			end++
		}
		return strings.Join(lines[start:end], "\n") + "\n"
	}
	t.Fatalf("Makefile has no %s rule", target)
	return ""
}

// make test runs every test target even when the first fails, and names
// each failed one at the end with a non-zero exit (issue 32: a vet or unit
// failure on one machine kept e2e from ever running).
func TestMakeTestRunsEveryTarget(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	// The real rule, with stand-ins for the targets it runs: vet and e2e
	// fail, check-patches and unit pass; each leaves a mark that it ran.
	mk := rule(t, "test") + `
check-patches:
	@touch ran-check-patches
vet:
	@touch ran-vet; exit 1
unit:
	@touch ran-unit
e2e:
	@touch ran-e2e; false
`
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "--no-print-directory", "test")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MAKEFLAGS=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil {
		t.Fatalf("make test passed with failing targets:\n%s", out.String())
	}
	for _, tgt := range []string{"check-patches", "vet", "unit", "e2e"} {
		if _, err := os.Stat(filepath.Join(dir, "ran-"+tgt)); err != nil {
			t.Errorf("%s did not run:\n%s", tgt, out.String())
		}
	}
	if !strings.Contains(out.String(), "make test: failed: vet e2e") {
		t.Errorf("output does not name the failed targets:\n%s", out.String())
	}

	// All passing: exit 0.
	mk = strings.NewReplacer("; exit 1", "", "; false", "").Replace(mk)
	os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644)
	cmd = exec.Command("make", "--no-print-directory", "test")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MAKEFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "passed") {
		t.Errorf("all passing: %v\n%s", err, b)
	}
}
