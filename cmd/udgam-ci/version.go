package main

import (
	"fmt"

	"github.com/udgamlabs/udgam-ci/internal/release"
	"github.com/udgamlabs/udgam-ci/runner"
)

func runVersion(e *env, args []string) error {
	fs := newFlags(e, "version", "print the version of udgam-ci and its engine", "udgam-ci version")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "udgam-ci %s\nengine %s\n", release.Version, runner.EngineVersion())
	return nil
}
