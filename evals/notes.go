package evals

import (
	"fmt"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// SelectionNotes say why a run scores other than what was asked or what
// its data hold: a --sample larger than the data, and the records --exclude
// left out. The score commands print them before scoring and in the
// summary; noun names the records ("documents", "items").
func SelectionNotes(h runfile.Header, noun string) []string {
	var out []string
	if s := h.Sample; s != nil && s.N > len(s.IDs) {
		out = append(out, fmt.Sprintf("--sample %d: the data hold %d %s, so the sample is all %d", s.N, len(s.IDs), noun, len(s.IDs)))
	}
	if c := h.Contamination; c != nil && c.Excluded {
		out = append(out, fmt.Sprintf("--exclude %s: %d of the %d %s it checked were found in the training data and are not scored", c.Report, len(c.IDs), c.Checked, noun))
	}
	return out
}
