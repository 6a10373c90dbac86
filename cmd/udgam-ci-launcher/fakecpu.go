//go:build fakecpu

package main

import (
	"os"
	"strings"

	"github.com/udgamlabs/udgam-ci/internal/cpuvariant"
)

// Test builds only: UDGAM_CI_FAKE_CPU lists the features the launcher
// believes the CPU has (comma-separated), so its tests can play any CPU.
func init() {
	if s, ok := os.LookupEnv("UDGAM_CI_FAKE_CPU"); ok {
		detect = func() cpuvariant.Features { return cpuvariant.NewFeatures(strings.Split(s, ",")...) }
	}
}
