// Command udgam-ci-launcher is installed as udgam-ci where udgam-ci travels
// (the Docker image, make variants): it reads this CPU's features, picks the
// best build of udgam-ci installed in ../libexec that the CPU runs
// (internal/cpuvariant), and execs it with the same arguments and
// environment. UDGAM_CI_VARIANT=NAME forces one. It has no cgo, so it starts
// on any CPU of its architecture and refuses, in words, where no build fits.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/udgamlabs/udgam-ci/internal/cpuvariant"
)

// detect reads the CPU; a test build (-tags fakecpu) replaces it.
var detect = cpuvariant.Detect

func main() {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		fail(fmt.Errorf("find the launcher's own path: %w", err))
	}
	path, c, err := cpuvariant.Find(exe, detect(), runtime.GOARCH, os.Getenv(cpuvariant.ForceEnv))
	if err != nil {
		fail(err)
	}
	if w := c.Warning(); w != "" {
		fmt.Fprintf(os.Stderr, "udgam-ci: warning: %s\n", w)
	}
	// Exec, not a child process: signals, the exit code and the terminal
	// are the variant's own.
	err = syscall.Exec(path, os.Args, os.Environ())
	fail(fmt.Errorf("run %s: %w", path, err))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "udgam-ci: %v\n", err)
	os.Exit(1)
}
