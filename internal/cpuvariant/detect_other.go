//go:build !amd64

package cpuvariant

// Detect reads the running CPU's features. Outside amd64 the variants
// (one arm64 baseline) need none.
func Detect() Features {
	return Features{}
}
