package servertest

import (
	"fmt"
	"math"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// History returns the runs of a plausible training history of one model:
// revisions every six hours whose scores improve slowly, with both tests
// scored at each revision, every fourth revision a pull request, and one
// revision scored with another engine build (its runs get flagged).
// records is the size of each run. The order is upload order.
func History(model string, revisions, records int) []Spec {
	start := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC) // 500 revisions end in October, before any test clock
	var out []Spec
	for i := range revisions {
		progress := float64(i) / math.Max(1, float64(revisions-1))
		wobble := math.Sin(float64(i) * 1.7)
		sp := Spec{
			Model:    model,
			Revision: fmt.Sprintf("%08x%032x", uint32(i*2654435761), i),
			Records:  records,
			Started:  start.Add(time.Duration(i) * 6 * time.Hour),
			Seed:     uint64(i),
		}
		if i%4 == 3 {
			sp.Ref, sp.PR = fmt.Sprintf("exp/lr-sweep-%d", i), 100+i
		}
		if i == revisions/2 {
			sp.Engine = "llama.cpp b4100 (rebuilt)"
		}
		fresh, probes := sp, sp
		fresh.Test, fresh.ID = runfile.TestFresh, fmt.Sprintf("fresh-%04d", i)
		fresh.Score = 1.02 - 0.08*progress + 0.006*wobble
		probes.Test, probes.ID = runfile.TestProbes, fmt.Sprintf("probes-%04d", i)
		probes.Score = 36 + 9*progress + 1.5*wobble
		out = append(out, fresh, probes)
	}
	return out
}
