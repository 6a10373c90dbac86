package runfile

import "strconv"

// Coverage is how much of its set a run scored: Scored records of the Of
// its header says it set out to score, and whether it stopped by a
// sequential rule. It is the one home of what makes a run partial, the
// rule every baseline passes (a partial run is never one).
type Coverage struct {
	Scored     int
	Of         int
	Sequential bool
	// Cost is a sequential run's share of its set (CostOf), whose bytes
	// the label says too.
	Cost Cost
}

// CoverageOf is r's coverage. The records a run sets out to score are its
// sequential set's, else its sample's, else its dataset's, less what a
// contamination scan excluded from them; variant records do not count.
func CoverageOf(r *Run) Coverage {
	h := &r.Header
	c := Coverage{Scored: len(r.Docs) + len(r.Items)}
	if h.Sequential != nil {
		c.Sequential, c.Of = true, h.Sequential.Total
		c.Cost = CostOf(h.Sequential, r.Docs, r.Items)
		return c
	}
	c.Of = h.Dataset.Count
	in := func(string) bool { return true }
	if h.Sample != nil {
		c.Of = len(h.Sample.IDs)
		ids := make(map[string]bool, len(h.Sample.IDs))
		for _, id := range h.Sample.IDs {
			ids[id] = true
		}
		in = func(id string) bool { return ids[id] }
	}
	if k := h.Contamination; k != nil && k.Excluded {
		for _, id := range k.IDs {
			if in(id) {
				c.Of--
			}
		}
	}
	return c
}

// Partial reports whether the run stopped short of its set: sequential,
// or fewer records than it set out to score.
func (c Coverage) Partial() bool { return c.Sequential || c.Scored < c.Of }

// String is the coverage of a partial run as pages show it ("50 of 400,
// sequential", with the bytes' share where known), and "" for a whole one.
func (c Coverage) String() string {
	if !c.Partial() {
		return ""
	}
	s := strconv.Itoa(c.Scored) + " of " + strconv.Itoa(c.Of)
	if c.Sequential {
		s += ", sequential"
	}
	if b := c.Cost.Phrase(); b != "" {
		s += ", " + b
	}
	return s
}
