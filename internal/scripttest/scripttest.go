// Package scripttest runs the repository's install scripts for tests. Each
// script installs into a cache outside the repository and prints what it
// installed on its last line, so the cache's location has one home: the
// script.
package scripttest

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Install runs scripts/rel of this source tree with bash and returns the
// path its last line names.
func Install(rel string) (string, error) {
	_, src, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the source tree")
	}
	script := filepath.Join(filepath.Dir(src), "..", "..", "scripts", rel)
	cmd := exec.Command("bash", script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %v\n%s", script, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}
