package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/internal/cpuvariant"
)

// fakeVariant prints its name, its arguments and one variable, and exits
// with the code UDGAM_TEST_EXIT asks for: a stand-in for a real engine build.
const fakeVariant = `#!/bin/sh
echo "variant %s"
for a in "$@"; do echo "arg[$a]"; done
echo "env[$UDGAM_TEST_VAR]"
exit ${UDGAM_TEST_EXIT:-0}
`

// install lays out PREFIX/bin/udgam-ci (the launcher) and one fake per
// variant in PREFIX/libexec, and returns the launcher's path.
func install(t *testing.T, launcher string, variants ...string) string {
	t.Helper()
	prefix := t.TempDir()
	for _, d := range []string{"bin", "libexec"} {
		if err := os.Mkdir(filepath.Join(prefix, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(launcher)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(prefix, "bin", "udgam-ci")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range variants {
		if err := os.WriteFile(cpuvariant.Path(filepath.Join(prefix, "libexec"), v), []byte(fmt.Sprintf(fakeVariant, v)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return exe
}

func buildLauncher(t *testing.T) string {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("the fake CPUs below are x86-64 levels")
	}
	out := filepath.Join(t.TempDir(), "udgam-ci-launcher")
	cmd := exec.Command("go", "build", "-tags", "fakecpu", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the launcher: %v\n%s", err, b)
	}
	return out
}

func features(t *testing.T, name string) string {
	t.Helper()
	for _, v := range cpuvariant.Table("amd64") {
		if v.Name == name {
			return strings.Join(v.Requires, ",")
		}
	}
	t.Fatalf("no variant %s", name)
	return ""
}

func TestLauncher(t *testing.T) {
	t.Parallel()
	launcher := buildLauncher(t)
	all := []string{"x86-64-v2", "x86-64-v3", "x86-64-v4"}
	v2, v3, v4 := features(t, "x86-64-v2"), features(t, "x86-64-v3"), features(t, "x86-64-v4")
	args := []string{"score", "fresh", "--model", "a b.gguf", ""}
	argLines := "arg[score]\narg[fresh]\narg[--model]\narg[a b.gguf]\narg[]\n"
	tests := []struct {
		name      string
		installed []string
		env       []string
		ran       string // the variant that must run; "" when the launcher refuses
		code      int
		stderr    []string // substrings of stderr; none means stderr is empty
	}{
		{name: "best of all on v3", installed: all, env: []string{"UDGAM_CI_FAKE_CPU=" + v3}, ran: "x86-64-v3"},
		{name: "best of all on v4", installed: all, env: []string{"UDGAM_CI_FAKE_CPU=" + v4}, ran: "x86-64-v4"},
		{name: "exit code passes through", installed: all, env: []string{"UDGAM_CI_FAKE_CPU=" + v2, "UDGAM_TEST_EXIT=7"}, ran: "x86-64-v2", code: 7},
		{name: "better one missing warns", installed: all[:2], env: []string{"UDGAM_CI_FAKE_CPU=" + v4}, ran: "x86-64-v3",
			stderr: []string{"warning", "x86-64-v4 engine, which this install lacks: running x86-64-v3"}},
		{name: "forced below the best", installed: all, env: []string{"UDGAM_CI_FAKE_CPU=" + v4, "UDGAM_CI_VARIANT=x86-64-v2"}, ran: "x86-64-v2"},
		{name: "forced above the CPU is refused", installed: all, env: []string{"UDGAM_CI_FAKE_CPU=" + v3, "UDGAM_CI_VARIANT=x86-64-v4"}, code: 1,
			stderr: []string{"UDGAM_CI_VARIANT=x86-64-v4: this CPU lacks AVX-512F, AVX-512BW, AVX-512CD, AVX-512DQ, AVX-512VL"}},
		{name: "none fits", installed: all[1:], env: []string{"UDGAM_CI_FAKE_CPU=" + v2}, code: 1,
			stderr: []string{"libexec: no installed engine variant runs on this CPU", "x86-64-v3 needs AVX"}},
		{name: "none installed", env: []string{"UDGAM_CI_FAKE_CPU=" + v4}, code: 1, stderr: []string{"no engine variant is installed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exe := install(t, launcher, tt.installed...)
			stdout, stderr, code := launch(t, exe, args, tt.env)
			checkRun(t, stdout, stderr, code, tt.ran, argLines, tt.code, tt.stderr)
		})
	}

	// Through a symlink (as in a PATH directory), with the CPU this test
	// runs on: the same choice the package makes here.
	t.Run("real CPU via symlink", func(t *testing.T) {
		exe := install(t, launcher, all...)
		link := filepath.Join(t.TempDir(), "udgam-ci")
		if err := os.Symlink(exe, link); err != nil {
			t.Fatal(err)
		}
		c, err := cpuvariant.Choose(cpuvariant.Table("amd64"), cpuvariant.Detect(), all, "")
		if err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := launch(t, link, args, nil)
		checkRun(t, stdout, stderr, code, c.Variant.Name, argLines, 0, nil)
	})
}

func launch(t *testing.T, exe string, args, env []string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "UDGAM_TEST_VAR=passed through")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), ee.ExitCode()
	}
	t.Fatalf("run %s: %v", exe, err)
	return "", "", 0
}

func checkRun(t *testing.T, stdout, stderr string, code int, ran, argLines string, wantCode int, wantStderr []string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("exit code %d, want %d (stderr %q)", code, wantCode, stderr)
	}
	want := ""
	if ran != "" {
		want = "variant " + ran + "\n" + argLines + "env[passed through]\n"
	}
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	if len(wantStderr) == 0 && stderr != "" {
		t.Errorf("stderr %q, want none", stderr)
	}
	for _, w := range wantStderr {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q does not say %q", stderr, w)
		}
	}
}

// The launcher must start on any CPU: it links neither cgo nor the engine.
func TestLauncherHasNoCgo(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "runtime/cgo" || strings.HasPrefix(p, "github.com/ollama/") || strings.Contains(p, "runner") {
			t.Errorf("the launcher depends on %s", p)
		}
	}
}
