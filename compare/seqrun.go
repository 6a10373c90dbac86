package compare

import (
	"fmt"
	"math"

	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Sequential is the comparison of a sequential head run (`--until
// decided`) with a baseline that holds the whole set: the anytime-valid
// interval of the whole set's delta (also in Result.CI), how much was
// scored, why it stopped and whether that decided.
type Sequential struct {
	Level     float64 `json:"level"`
	MinEffect float64 `json:"min_effect"` // the run's own, in the test's unit
	Seed      uint64  `json:"seed"`       // of the order
	Budget    string  `json:"budget,omitempty"`
	Scored    int     `json:"scored"` // records in the sequence
	Total     int     `json:"total"`  // records in the whole set
	// Cost is what the head run scored (all its records, past a gap in the
	// order too) out of the whole set, in records and bytes.
	Cost runfile.Cost `json:"cost"`
	// Unit is the header's: runfile.UnitSpan when the records are spans.
	Unit string     `json:"unit,omitempty"`
	CI   [2]float64 `json:"ci"`
	// Reason is compare/sequential's: beyond, within, complete, budget or
	// stopped (ended otherwise: interrupted, or a shard's part ran out).
	Reason  string `json:"reason"`
	Decided bool   `json:"decided"` // beyond, within or complete
	// LeftOut counts head records past the first gap in the order (merged
	// shards that stopped at different points): scored, but not in the
	// sequence.
	LeftOut int `json:"left_out,omitempty"`
	// Broken names the record that broke the rule's assumption (Fresh
	// Text's bound on a document's residual bits): from it on the run
	// could not stop early.
	Broken string `json:"broken,omitempty"`
	// NoInterval: the rule gave no interval (stopped before its longest
	// documents were all in, or after its assumption broke).
	NoInterval bool `json:"no_interval,omitempty"`
}

// NoChangeLargerThan is the largest change the interval leaves open: the
// "no change larger than ±X" of an undecided run.
func (s *Sequential) NoChangeLargerThan() float64 {
	return math.Max(math.Abs(s.CI[0]), math.Abs(s.CI[1]))
}

// sequentialResult replays a sequential head run's records, in the order
// they were scored (the seeded order over the baseline's ids), through
// the tracker the run stopped with, and judges the whole set's delta by
// its anytime-valid interval. It returns nil and a note when the runs
// cannot carry it (then the fixed-sample bootstrap stands).
func sequentialResult(base, head *runfile.Run) (*Sequential, string) {
	s, note, err := ReplaySequential(base, head)
	if err != nil {
		return nil, fmt.Sprintf("The head run was scored sequentially (--until decided), but %v; the interval is the fixed-sample bootstrap over the shared records.", err)
	}
	if s.NoInterval {
		return nil, note
	}
	return s, note
}

// ReplaySequential recomputes, from a sequential head run's records and
// the rule in its header, where it stopped and why against base: what
// every surface shows instead of the header's own claim (the report
// server refuses a header whose claim differs), with a note for the reader
// when the rule gives no interval or its assumption failed.
func ReplaySequential(base, head *runfile.Run) (*Sequential, string, error) {
	h := head.Header.Sequential
	if h == nil {
		return nil, "", fmt.Errorf("run %s was not scored sequentially", head.Header.ID)
	}
	tr, err := NewTracker(base, head.Header.Test, *h)
	if err != nil {
		return nil, "", err
	}
	docs := map[string]*runfile.Doc{}
	for i := range head.Docs {
		docs[head.Docs[i].ID] = &head.Docs[i]
	}
	items := map[string]*runfile.Item{}
	for i := range head.Items {
		items[head.Items[i].ID] = &head.Items[i]
	}
	ids := make([]string, 0, base.Len())
	for i := range base.Docs {
		ids = append(ids, base.Docs[i].ID)
	}
	for i := range base.Items {
		ids = append(ids, base.Items[i].ID)
	}
	for _, id := range tr.Order(ids, h.Seed) {
		var rec any
		if d, ok := docs[id]; ok {
			rec = *d
		} else if it, ok := items[id]; ok {
			rec = *it
		} else {
			break // the first gap in the order ends the sequence
		}
		if err := tr.Add(rec); err != nil {
			return nil, "", err
		}
	}
	s := &Sequential{Level: h.Level, MinEffect: h.MinEffect, Seed: h.Seed, Budget: h.Budget,
		Scored: tr.Scored(), Total: h.Total, Unit: h.Unit, CI: tr.Interval(), LeftOut: head.Len() - tr.Scored(), Broken: tr.Broken()}
	s.Cost = runfile.CostOf(h, head.Docs, head.Items)
	whole := runfile.CostOf(nil, base.Docs, base.Items) // the baseline holds the whole set
	if s.Cost.TotalBytes == 0 {
		s.Cost.TotalBytes = whole.TotalBytes // runs made before the header recorded it
	}
	if bs, hs := base.Header.Settings, head.Header.Settings; bs.TokenizerSHA256 != "" && bs.TokenizerSHA256 == hs.TokenizerSHA256 && bs.AddBOS == hs.AddBOS {
		// the same tokenizer and BOS give each record the baseline's tokens
		s.Cost.TotalTokens = whole.Tokens
	}
	s.Reason = tr.Decision()
	note := ""
	if s.Reason == "" && !tr.Bounded() {
		// no interval: the run stopped before its longest documents were all
		// in, or after a document broke the rule's assumption
		why := fmt.Sprintf("it stopped after %d of %d records, before the longest documents, which it scores first, were all in", tr.Scored(), h.Total)
		if s.Broken != "" {
			why = fmt.Sprintf("%s, so no interval holds, and it stopped after %d of %d records", s.Broken, tr.Scored(), h.Total)
		}
		s.NoInterval = true
		note = fmt.Sprintf("The head run was scored sequentially (--until decided), but %s; the interval is the fixed-sample bootstrap over the shared records.", why)
	}
	switch {
	case s.Reason != "":
		s.Decided = true
	case h.Stop != nil && h.Stop.Scored == s.Scored && h.Stop.Reason == sequential.Budget:
		s.Reason = sequential.Budget
	default:
		s.Reason = sequential.Stopped
	}
	if note == "" && s.Broken != "" {
		note = fmt.Sprintf("The stopping rule's assumption failed: %s; the run could not stop early from there on.", s.Broken)
	}
	return s, note, nil
}

// judgeSequential sets r's interval and verdict from s: a change when the
// sequence lies beyond the minimum effect, no change when it lies within
// it; otherwise (the budget ran out) as a fixed interval is judged, a
// change when it excludes zero and the delta reaches the minimum effect.
func judgeSequential(r *Result, s *Sequential, minEffect float64) {
	r.CI = s.CI
	lo, hi := s.CI[0], s.CI[1]
	switch {
	case s.Reason == sequential.Beyond:
		r.Significant = true
		r.Verdict = direction(r.Metric, lo > 0)
		return
	case s.Reason == sequential.Within:
		r.Significant, r.Verdict = false, NoChange
		return
	}
	r.Significant = !r.TooFew && (lo > 0 || hi < 0) && math.Abs(r.Delta) >= minEffect
	r.Verdict = NoChange
	if r.Significant {
		r.Verdict = direction(r.Metric, r.Delta > 0)
	}
}

// direction is the verdict of a change that raises the metric (up) or
// lowers it: lower bits per byte and higher accuracy are better.
func direction(metric string, up bool) Verdict {
	if up == (metric == MetricBPB) {
		return Regressed
	}
	return Improved
}
