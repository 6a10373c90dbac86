package main

import (
	"fmt"
	"strings"

	"github.com/udgamlabs/udgam-ci/ggufspec"
	"github.com/udgamlabs/udgam-ci/internal/release"
)

func runVersion(e *env, args []string) error {
	fs := newFlags(e, "version", "print the version of udgam-ci and its engine", "udgam-ci version")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "udgam-ci %s\nengine %s\n", release.Version, ggufspec.EngineVersion())
	if e.CPUVariant != "" {
		fmt.Fprintf(e.Stdout, "engine CPU target: %s\n", e.CPUVariant)
	}
	// A portable build on a newer CPU is exact but slower: say so.
	if unused := engineUnusedCPU(); len(unused) > 0 {
		fmt.Fprintf(e.Stdout, "engine CPU: this CPU also has %s, which this build leaves unused (make build compiles for it)\n", strings.Join(unused, ", "))
	}
	return nil
}
