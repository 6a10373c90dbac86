// Package release names this build of udgam-ci.
package release

// Version is udgam-ci's own version; release builds set it with -ldflags
// (-X github.com/udgamlabs/udgam-ci/internal/release.Version=...).
var Version = "0.1.0-dev"
