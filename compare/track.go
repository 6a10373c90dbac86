package compare

import (
	"errors"
	"fmt"
	"math"

	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Tracker follows a sequential run (`--until decided`) record by record
// against its baseline: it feeds each paired difference to the confidence
// sequence of compare/sequential and says when it decides. The scorers
// stop with it, and compare replays a run's records through it, so the
// run's stop and every surface show the same interval.
type Tracker struct {
	test  string
	scale float64 // the sequence's unit to the metric's (percent for accuracy)
	seq   *sequential.Sequence
	base  map[string]baseRec
	seen  map[string]bool
	noun  string
}

// baseRec is a baseline record's score: bits and bytes, or correct and 1.
type baseRec struct{ n, d float64 }

// NewTracker checks that base can anchor the sequential run s of test and
// starts the sequence: the baseline must hold every record of the set
// (s.Total), so the whole set's baseline score and weights are known, and,
// for Fresh Text, must have scored every byte of every document (a BOS
// token), so the head's byte counts are known before scoring.
func NewTracker(base *runfile.Run, test string, s runfile.Sequential) (*Tracker, error) {
	if base == nil {
		return nil, errors.New("sequential: no baseline run")
	}
	bh := base.Header
	switch {
	case bh.Test != test:
		return nil, fmt.Errorf("baseline run %s is a %s run, not %s", bh.ID, bh.Test, test)
	case base.Len() != s.Total:
		return nil, fmt.Errorf("baseline run %s holds %d records of the %d in the set: --until decided needs a baseline that scored the whole set", bh.ID, base.Len(), s.Total)
	}
	t := &Tracker{test: test, scale: 1, base: make(map[string]baseRec, base.Len()), seen: map[string]bool{}}
	cfg := sequential.Config{N: s.Total, Level: s.Level, MinEffect: s.MinEffect}
	switch test {
	case runfile.TestFresh:
		t.noun = "document"
		for _, d := range base.Docs {
			if d.FirstUnscored {
				return nil, fmt.Errorf("baseline run %s document %s: scored without BOS, so its byte count depends on the tokenizer; --until decided needs both runs to score every byte (--add-bos auto or yes, with a model that has a BOS token)", bh.ID, d.ID)
			}
			w := float64(d.Bytes)
			t.base[d.ID] = baseRec{d.Bits, w}
			cfg.W += w
			cfg.W2 += w * w
		}
	case runfile.TestProbes:
		t.noun, t.scale = "item", 100
		cfg.MinEffect /= t.scale
		cfg.Bound = 1 // a paired difference of correctness is −1, 0 or 1
		for _, it := range base.Items {
			t.base[it.ID] = baseRec{b2f(it.Correct), 1}
		}
		cfg.W = float64(len(base.Items))
	default:
		return nil, fmt.Errorf("sequential: unknown test %q", test)
	}
	seq, err := sequential.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("baseline run %s: %w", bh.ID, err)
	}
	t.seq = seq
	return t, nil
}

// Has reports whether the baseline holds the record id.
func (t *Tracker) Has(id string) bool {
	_, ok := t.base[id]
	return ok
}

// Add takes the head's next record in the scored order: a runfile.Doc or
// a runfile.Item.
func (t *Tracker) Add(rec any) error {
	var id string
	var n, d float64
	switch r := rec.(type) {
	case runfile.Doc:
		id, n, d = r.ID, r.Bits, float64(r.Bytes)
	case runfile.Item:
		id, n, d = r.ID, b2f(r.Correct), 1
	default:
		return fmt.Errorf("sequential: record of type %T", rec)
	}
	b, ok := t.base[id]
	switch {
	case !ok:
		return fmt.Errorf("sequential: %s %s is not in the baseline run", t.noun, id)
	case t.seen[id]:
		return fmt.Errorf("sequential: %s %s given twice", t.noun, id)
	case d != b.d:
		return fmt.Errorf("sequential: %s %s: the head scored %g bytes, the baseline %g; --until decided needs both runs to score every byte (a BOS token on both sides)", t.noun, id, d, b.d)
	}
	t.seen[id] = true
	return t.seq.Add(n-b.n, b.d)
}

// Decision is compare/sequential's: Beyond, Within, Complete, or "".
func (t *Tracker) Decision() string {
	r, _ := t.seq.Decision()
	return r
}

// Scored is how many records the tracker has taken.
func (t *Tracker) Scored() int { return t.seq.Scored() }

// Interval is the anytime-valid interval of the whole set's delta, in the
// metric's unit; before any record it is [0, 0] (nothing to show).
func (t *Tracker) Interval() [2]float64 {
	lo, hi := t.seq.Interval()
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return [2]float64{}
	}
	return [2]float64{t.scale * lo, t.scale * hi}
}

// Estimate is the paired delta over the records taken, in the metric's unit.
func (t *Tracker) Estimate() float64 { return t.scale * t.seq.Estimate() }

// Stop is the run header's record of stopping now for reason.
func (t *Tracker) Stop(reason string) runfile.Stop {
	return runfile.Stop{Reason: reason, Scored: t.Scored(), CI: t.Interval()}
}

// StartSequential is the header record and the tracker of a sequential
// run of test against base, the one way the command line and the Action
// start one: the order's seed, the level, the minimum effect in the test's
// unit (0 for none) and the budget as given.
func StartSequential(base *runfile.Run, test string, seed uint64, level, minEffect float64, budget string) (runfile.Sequential, *Tracker, error) {
	if base == nil {
		return runfile.Sequential{}, nil, errors.New("sequential: no baseline run")
	}
	h := runfile.Sequential{Rule: runfile.RuleUntilDecided, Seed: seed, Level: level, MinEffect: max(0, minEffect),
		Budget: budget, Baseline: base.Header.ID, Total: base.Len()}
	t, err := NewTracker(base, test, h)
	return h, t, err
}
