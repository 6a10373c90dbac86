// Package release names this build of udgam-ci.
package release

// Version is udgam-ci's own version; release builds set it with -ldflags
// (-X github.com/udgamlabs/udgam-ci/internal/release.Version=...).
var Version = "0.1.0-dev"

// CPUVariant names the CPU target the engine was compiled for, set by the
// Makefile with -ldflags: a variant's -march level (x86-64-v3, make
// variants), or "native" (make build). Empty in builds that do not say
// (go test).
var CPUVariant = ""
