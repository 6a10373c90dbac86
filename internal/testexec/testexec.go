// Package testexec starts the running test binary again as a child
// process, for tests that need a process of their own (one killed
// mid-write, one whose libraries load once per process).
//
// make arm64-test runs arm64 test binaries on an x86-64 machine under
// qemu-user (go test -exec), and an emulated process cannot exec an arm64
// binary itself (that would take binfmt_misc): UDGAM_TEST_EXEC, set by the
// Makefile to the same emulator command, is then put before the binary.
package testexec

import (
	"os"
	"os/exec"
	"strings"
)

// Env names the command, split at spaces, that runs a binary of the test
// binary's architecture; empty or unset, the binary runs itself.
const Env = "UDGAM_TEST_EXEC"

// Self returns the command that runs this test binary with args.
func Self(args ...string) *exec.Cmd { return command(os.Getenv(Env), os.Args[0], args) }

// command runs bin with args, after the words of prefix if any.
func command(prefix, bin string, args []string) *exec.Cmd {
	words := strings.Fields(prefix)
	if len(words) == 0 {
		return exec.Command(bin, args...)
	}
	return exec.Command(words[0], append(append(words[1:], bin), args...)...)
}
