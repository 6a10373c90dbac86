package testexec

import (
	"os"
	"strings"
	"testing"
)

// The child is this binary, run through UDGAM_TEST_EXEC where the Makefile
// sets it (an emulator), and it says which test it ran; a prefix is put
// before the binary and its arguments in order.
func TestSelf(t *testing.T) {
	t.Parallel()
	if os.Getenv("UDGAM_TESTEXEC_CHILD") == "1" {
		os.Stdout.WriteString("child " + strings.Join(os.Args[1:], " ") + "\n")
		return
	}
	cmd := Self("-test.run=^TestSelf$")
	cmd.Env = append(os.Environ(), "UDGAM_TESTEXEC_CHILD=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	if !strings.HasPrefix(string(out), "child -test.run=^TestSelf$\n") {
		t.Errorf("%s printed %q, want the child's line first", cmd, out)
	}

	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{os.Args[0], "-x", "y"}},
		{"  qemu-aarch64 -L /usr/aarch64-linux-gnu ", []string{"qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", os.Args[0], "-x", "y"}},
	} {
		if got := command(tc.prefix, os.Args[0], []string{"-x", "y"}).Args; strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s=%q: %q, want %q", Env, tc.prefix, got, tc.want)
		}
	}
}
