package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// asBinaryEnv makes the test binary run as udgam-ci itself (TestMain calls
// main), so that a test sees a command as a user does: the process's exit
// status, stdout and stderr.
const asBinaryEnv = "UDGAM_CI_TEST_AS_BINARY"

// runBinary runs udgam-ci with args in dir, with extra environment
// variables, and returns its exit status and output.
func runBinary(t *testing.T, dir string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), asBinaryEnv+"=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return ee.ExitCode(), out.String(), errb.String()
	}
	return 0, out.String(), errb.String()
}
