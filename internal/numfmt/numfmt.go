// Package numfmt writes numbers for people. It imports nothing of
// udgam-ci's, so measuring packages (contamination, probes) and the
// renderers (report) share one rule without depending on one another.
package numfmt

import (
	"strconv"
	"strings"
)

// Count writes n with thousands commas: 1,670 and -12,345.
func Count(n int) string {
	s := strconv.Itoa(n)
	digits := strings.TrimPrefix(s, "-")
	var b strings.Builder
	b.WriteString(s[:len(s)-len(digits)])
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
