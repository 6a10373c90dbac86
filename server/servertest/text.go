package servertest

import "strings"

// Between is s from the first from to the next to after it (to the end
// when to does not follow; empty when from is not in s): the part of a
// page or a terminal's output a test reads.
func Between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i:]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}
