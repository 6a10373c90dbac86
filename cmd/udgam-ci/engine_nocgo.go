//go:build !cgo

package main

import (
	"errors"
	"fmt"
)

// errNoEngine is what scoring says in a build without cgo.
var errNoEngine = errors.New("this udgam-ci was built without cgo, so without its engine (llama.cpp): build it with make build")

const haveEngine = false

func loadEngine(path string, _ engineOptions) (engineModel, error) {
	return nil, fmt.Errorf("model %s: %w", path, errNoEngine)
}

func engineUnusedCPU() []string { return nil }

func engineGPUs() []string { return nil }
