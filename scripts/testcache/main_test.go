package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelperReads is the test binary testcache runs in these tests (this
// package's own, started again): it reads the file TESTCACHE_INPUT names
// and fails when it says "fail".
func TestHelperReads(t *testing.T) {
	t.Parallel()
	name := os.Getenv("TESTCACHE_INPUT")
	if name == "" {
		t.Skip("run by the tests below")
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	// As the engine's tests do: the temporary folder is opened to make it.
	if err := os.WriteFile(filepath.Join(t.TempDir(), "scratch"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("read %q", b)
	if strings.TrimSpace(string(b)) == "fail" {
		t.Fatal("the input says fail")
	}
}

// helper returns a run of this test binary's TestHelperReads in a fresh
// folder, the cache, the input file and the environment that names it.
func helper(t *testing.T) (run, cacheDir, string, []string) {
	dir := t.TempDir()
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	r := run{dir: dir, bin: bin, args: []string{"-test.run=^TestHelperReads$", "-test.v"}}
	env := append(os.Environ(), "TESTCACHE_INPUT="+input, "TMPDIR="+tmp)
	return r, cacheDir(filepath.Join(dir, "cache")), input, env
}

// A pass is read back only while the binary, its arguments, the
// environment it reads and the bytes of the files it opens are the same;
// each change runs the test again.
func TestKeptUntilAnInputChanges(t *testing.T) {
	t.Parallel()
	r, c, input, env := helper(t)
	step := func(what string, r run, env []string, wantCached bool) {
		t.Helper()
		res := c.test(r, nil, env)
		if res.err != nil || res.warning != "" {
			t.Fatalf("%s: %v %s\n%s", what, res.err, res.warning, res.out)
		}
		if res.cached != wantCached {
			t.Fatalf("%s: cached %t, want %t\n%s", what, res.cached, wantCached, res.out)
		}
		if !strings.Contains(string(res.out), "--- PASS: TestHelperReads") {
			t.Fatalf("%s: the pass's output is not there:\n%s", what, res.out)
		}
	}
	step("first run", r, env, false)
	step("same inputs", r, env, true)
	// Other processes' files in the temporary folder are not the test's.
	if err := os.WriteFile(filepath.Join(r.dir, "tmp", "another-process"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	step("another file in the temporary folder", r, env, true)
	if err := os.WriteFile(input, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	step("the file's bytes changed", r, env, false)
	step("same again", r, env, true)
	// Another file with the same bytes: the variable's value is the change.
	same := filepath.Join(r.dir, "same.txt")
	if err := os.WriteFile(same, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	env = append(env, "TESTCACHE_INPUT="+same)
	step("the variable it reads changed", r, env, false)
	step("a variable it does not read added", r, append(env, "TESTCACHE_UNREAD=1"), true)
	other := r
	other.args = []string{"-test.run=^TestHelperReads$", "-test.v", "-test.short"}
	step("other arguments", other, env, false)
	// The emulator is part of the key: env(1) as a do-nothing one.
	if res := c.test(r, []string{"env"}, env); res.err != nil || res.cached {
		t.Fatalf("through env: err %v, cached %t; want a run", res.err, res.cached)
	}
	if res := c.test(r, []string{"env"}, env); res.err != nil || !res.cached {
		t.Fatalf("through env again: err %v, cached %t; want the kept pass", res.err, res.cached)
	}
}

// A failure is never kept: the same inputs run again and fail again.
func TestFailureNotKept(t *testing.T) {
	t.Parallel()
	r, c, input, env := helper(t)
	if err := os.WriteFile(input, []byte("fail"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		res := c.test(r, nil, env)
		if res.err == nil || res.cached {
			t.Fatalf("run %d: err %v, cached %t; want a failure that ran", i, res.err, res.cached)
		}
		if !strings.Contains(string(res.out), "the input says fail") {
			t.Fatalf("run %d: the failure's output is not there:\n%s", i, res.out)
		}
	}
	if entries, err := os.ReadDir(string(c)); err == nil && len(entries) > 0 {
		t.Fatalf("a failure left %d entries in the cache", len(entries))
	}
}

// Without a cache folder every run runs.
func TestNoCacheRunsEveryTime(t *testing.T) {
	t.Parallel()
	r, _, _, env := helper(t)
	for i := 0; i < 2; i++ {
		if res := cacheDir("").test(r, nil, env); res.err != nil || res.cached {
			t.Fatalf("run %d: err %v, cached %t", i, res.err, res.cached)
		}
	}
}

func TestParseRun(t *testing.T) {
	t.Parallel()
	r, err := parseRun("runner/llama=bin/llama.test,-test.run=^TestX$,-test.timeout=20m")
	if err != nil || r.dir != "runner/llama" || !filepath.IsAbs(r.bin) || len(r.args) != 2 || r.args[0] != "-test.run=^TestX$" {
		t.Fatalf("got %+v, %v", r, err)
	}
	for _, bad := range []string{"runner/llama", "=bin", "dir=bin,-run=x"} {
		if _, err := parseRun(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
