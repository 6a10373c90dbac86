package servertest

import (
	"fmt"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Sequential makes the run head describes as a sequential run against
// base that stopped after n records of the seeded order, at level, with
// its header's stop as compare replays it: what `--until decided`
// writes, without a model.
func Sequential(base *runfile.Run, head Spec, n int, seed uint64, level float64) (*runfile.Run, error) {
	r := head.Run()
	h := &r.Header
	setBytes := 0
	for _, d := range base.Docs {
		setBytes += d.Bytes
	}
	h.Sequential = &runfile.Sequential{Rule: runfile.RuleUntilDecided, Seed: seed, Level: level,
		Baseline: base.Header.ID, Total: base.Len(), Bytes: int64(setBytes)}
	h.Dataset.Count = base.Len()
	tr, err := compare.NewTracker(base, h.Test, *h.Sequential)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, id := range tr.Order(base.IDs(), seed)[:n] {
		keep[id] = true
	}
	docs, items := r.Docs[:0], r.Items[:0]
	baseBytes := map[string]int{}
	for _, d := range base.Docs {
		baseBytes[d.ID] = d.Bytes
	}
	for _, d := range r.Docs {
		if keep[d.ID] {
			// A sequential run scores every byte the baseline scored.
			if b := baseBytes[d.ID]; b > 0 {
				d.Bits, d.Tokens, d.Bytes = d.Bits/float64(d.Bytes)*float64(b), b/4, b
			}
			docs = append(docs, d)
		}
	}
	for _, it := range r.Items {
		if keep[it.ID] {
			items = append(items, it)
		}
	}
	r.Docs, r.Items = docs, items
	if r.Len() != n {
		return nil, fmt.Errorf("servertest: %d of the %d records asked pair with base %s", r.Len(), n, base.Header.ID)
	}
	rep, _, err := compare.ReplaySequential(base, r)
	if err != nil {
		return nil, err
	}
	h.Sequential.Stop = &runfile.Stop{Reason: rep.Reason, Scored: rep.Scored, CI: rep.CI}
	return r, nil
}
