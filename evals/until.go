package evals

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Until makes a run sequential (`--until decided`): its records are scored
// in one order, the same for every model (Fresh Text's longest documents
// first, then a seeded random order), and scoring stops
// once the comparison with a baseline decides or the budget runs out.
type Until struct {
	// Header is what the run header records; the run fills Total.
	Header runfile.Sequential
	// Tracker follows the comparison (compare.Tracker).
	Tracker Tracker
	// MaxRecords and MaxDuration are the budget: records in the file
	// (a resumed run's earlier ones too), and this invocation's scoring
	// time. Zero means no limit.
	MaxRecords  int
	MaxDuration time.Duration
	// spans is, after Order, the span (from 1) each selected record
	// scores of its document in a run over spans; nil otherwise.
	spans []int
}

// Tracker is what the loop asks of a sequential comparison: take each
// record in the scored order, say whether it decided, and describe the
// stop for the header.
type Tracker interface {
	Has(id string) bool // the record (or document) is in the baseline
	// Order is the order of the set's records for seed, given its ids
	// (compare.Tracker: the take-all stratum of the longest documents
	// first, the rest shuffled; or, over spans, the ids of every span of
	// the documents, runfile.SpanID, shuffled).
	Order(ids []string, seed uint64) []string
	Add(rec any) error
	Decision() string
	Scored() int
	Stop(reason string) runfile.Stop
}

// errDecided ends scoring from inside the record callback once the rule
// stops; Finish turns it into a finished run.
var errDecided = errors.New("sequential run stopped")

// Order arranges the selected records (idx into keys, every record of the
// set) in the tracker's order and, for a shard, keeps the positions of that
// order dealt to it (i, i+n, i+2n, ... of n), so each shard scores a
// random order of its own and the shards together a prefix of the order.
// The set must be the baseline's, record for record (u.Header.Total). In a
// run over spans an index comes once for each span of its document that
// is dealt; Spans says which.
func (u *Until) Order(keys []Keyed, idx []int, shard *runfile.Shard) ([]int, error) {
	at := make(map[string]int, len(idx))
	ids := make([]string, len(idx))
	for j, i := range idx {
		id := keys[i].ID
		if !u.Tracker.Has(id) {
			return nil, fmt.Errorf("--until decided: %s is not in the baseline run %s, which must hold every record of the set", id, u.Header.Baseline)
		}
		ids[j] = id
		at[id] = i
	}
	order := u.Tracker.Order(ids, u.Header.Seed)
	if len(order) != u.Header.Total {
		return nil, fmt.Errorf("--until decided: the set has %d records and the baseline run %s %d: they must be the same set", len(order), u.Header.Baseline, u.Header.Total)
	}
	var out []int
	u.spans = nil
	for p, id := range order {
		if shard != nil && p%shard.Count != shard.Index-1 {
			continue
		}
		i, ok := at[id]
		k := 0
		if !ok {
			doc, span, isSpan := runfile.ParseSpanID(id)
			if i, ok = at[doc]; !ok || !isSpan {
				return nil, fmt.Errorf("--until decided: record %s of the order is not in the set", id)
			}
			k = span
		}
		out = append(out, i)
		u.spans = append(u.spans, k)
	}
	return out, nil
}

// Spans is, after Order, which span of its document (from 1) each
// selected record is in a run over spans (runfile.Header's Sequential.Unit),
// 0 for a whole document or an item; nil for a fixed run.
func (u *Until) Spans() []int {
	if u == nil {
		return nil
	}
	return u.spans
}

// untilState is the loop's sequential part.
type untilState struct {
	u      *Until
	reason string // why it stopped; "" while it goes on
	warned bool   // the broken assumption was reported
}

// warn reports, once, that a record broke the assumption the rule rests
// on (compare.Tracker's Broken), so the run scores everything.
func (s *untilState) warn(w io.Writer, noun string) {
	b, ok := s.u.Tracker.(interface{ Broken() string })
	if !ok || s.warned || w == nil {
		return
	}
	if why := b.Broken(); why != "" {
		s.warned = true
		fmt.Fprintf(w, "--until decided: %s; the rule will not stop early, so every one of the %d %s is scored\n", why, s.u.Header.Total, noun)
	}
}

// feed gives the tracker the records a resumed file already holds, in the
// order they were scored, and says whether the run has already stopped.
func (s *untilState) feed(prior *runfile.Run) error {
	for i := range prior.Docs {
		if err := s.u.Tracker.Add(prior.Docs[i]); err != nil {
			return err
		}
	}
	for i := range prior.Items {
		if err := s.u.Tracker.Add(prior.Items[i]); err != nil {
			return err
		}
	}
	s.check(0)
	return nil
}

// check sets the reason to stop, if any, after elapsed scoring time.
func (s *untilState) check(elapsed time.Duration) bool {
	if r := s.u.Tracker.Decision(); r != "" {
		s.reason = r
	} else if (s.u.MaxRecords > 0 && s.u.Tracker.Scored() >= s.u.MaxRecords) || (s.u.MaxDuration > 0 && elapsed >= s.u.MaxDuration) {
		s.reason = sequential.Budget
	}
	return s.reason != ""
}

// finish records the stop in the run's header; the caller rewrites the
// file whole (temp then rename), its records untouched.
func (s *untilState) finish(run *runfile.Run) runfile.Stop {
	reason := s.reason
	if reason == "" {
		reason = sequential.Stopped // a shard's part ran out before a decision
	}
	stop := s.u.Tracker.Stop(reason)
	seq := *run.Header.Sequential
	seq.Stop = &stop
	run.Header.Sequential = &seq
	return stop
}

// StopLine says where a sequential run stopped and what it cost (the
// run's records, runfile.CostOf), for its progress and its summary; ""
// when it is not sequential or has not stopped. compare and report judge
// the stop against the baseline.
func StopLine(h *runfile.Sequential, cost runfile.Cost, noun string) string {
	if h == nil || h.Stop == nil {
		return ""
	}
	st := h.Stop
	of := fmt.Sprintf("%d of %d %s", st.Scored, h.Total, noun)
	if b := cost.Phrase(); b != "" {
		of += ", " + b
	}
	if st.CI == [2]float64{} && st.Reason != sequential.Complete && st.Reason != sequential.Within {
		return fmt.Sprintf("stopped (%s) after %s, with no anytime-valid interval (the longest documents, scored first, were not all in, as in a shard, which holds only its deal of them, or a record broke the rule's assumption)",
			st.Reason, of)
	}
	return fmt.Sprintf("stopped (%s) after %s; the whole set's delta against baseline run %s is in [%.4g, %.4g] (anytime-valid %g%%)",
		st.Reason, of, h.Baseline, st.CI[0], st.CI[1], 100*h.Level)
}

// SequentialCost is what a sequential run's records cost out of its set;
// nil for a run that is not sequential.
func SequentialCost(run *runfile.Run) *runfile.Cost {
	if run.Header.Sequential == nil {
		return nil
	}
	c := runfile.CostOf(run.Header.Sequential, run.Docs, run.Items)
	return &c
}

// HeaderOf is the run header's record of u: nil for a fixed run.
func HeaderOf(u *Until) *runfile.Sequential {
	if u == nil {
		return nil
	}
	h := u.Header
	return &h
}

// ParseBudget reads --budget: a duration of scoring ("45m", "1h30m") or a
// number of records ("400"); "" is no budget.
func ParseBudget(s string) (records int, d time.Duration, err error) {
	if s == "" {
		return 0, 0, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 {
			return 0, 0, fmt.Errorf("budget %q: want at least 1 record", s)
		}
		return n, 0, nil
	}
	d, err = time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, 0, fmt.Errorf("budget %q: want a duration such as 45m or 1h30m, or a number of records such as 400", s)
	}
	return 0, d, nil
}
