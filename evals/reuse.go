package evals

import (
	"fmt"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// reuse returns base's records for every selected record, in the order of
// pending, and marks h as reused from base, when base's records stand for
// this run (runfile.Unchanged, and base holds every selected record);
// otherwise nil and why not. A reused run is whole, not sequential: it
// holds the baseline's exact records, so its delta is zero.
func reuse(h *runfile.Header, base *runfile.Run, pending []Pending) ([]any, error) {
	if err := runfile.Unchanged(h, &base.Header); err != nil {
		return nil, err
	}
	recs := map[string]any{}
	for i := range base.Docs {
		recs[base.Docs[i].ID] = base.Docs[i]
	}
	for _, items := range [][]runfile.Item{base.Items, base.Variants} {
		for i := range items {
			recs[items[i].ID] = items[i]
		}
	}
	out := make([]any, len(pending))
	for i, p := range pending {
		rec, ok := recs[p.ID]
		if !ok {
			return nil, fmt.Errorf("baseline run %s has no record of %s", base.Header.ID, p.ID)
		}
		out[i] = rec
	}
	h.Reused = &runfile.Reused{From: base.Header.ID, Fingerprint: h.Model.Fingerprint}
	h.Sequential = nil
	return out, nil
}
