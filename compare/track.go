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
	ids   []string // taken, in order
	noun  string
	first map[string]bool // the take-all stratum, scored before the rest
	resid float64         // the assumed bound on the rest's residual bits
	// broken names the record whose score broke the rule's assumption,
	// and why; "" while it holds.
	broken string
	// partial is set once a record of the random part came before every
	// take-all record was in: a shard's deal of the order, which holds
	// only some of the longest documents and so cannot decide alone.
	partial bool
	// spans, in a run over spans (runfile.UnitSpan), lists each
	// document's span ids in order; nil when records are whole.
	spans map[string][]string
}

// baseRec is a baseline record's score: bits and bytes, or correct and 1;
// and a span's tokens, which the head's must equal.
type baseRec struct {
	n, d   float64
	tokens int
}

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
	case s.Unit == runfile.UnitSpan:
		return newSpanTracker(base, s)
	case s.Unit != "":
		return nil, fmt.Errorf("sequential: unknown unit %q", s.Unit)
	case base.Len() != s.Total:
		return nil, fmt.Errorf("baseline run %s holds %d records of the %d in the set: --until decided needs a baseline that scored the whole set", bh.ID, base.Len(), s.Total)
	}
	t := &Tracker{test: test, scale: 1, base: make(map[string]baseRec, base.Len()), seen: map[string]bool{}}
	cfg := sequential.Config{N: s.Total, Level: s.Level, MinEffect: s.MinEffect}
	switch test {
	case runfile.TestFresh:
		t.noun = "document"
		weights := make([]float64, len(base.Docs))
		for i, d := range base.Docs {
			if d.FirstUnscored {
				return nil, fmt.Errorf("baseline run %s document %s: scored without BOS, so its byte count depends on the tokenizer; --until decided needs both runs to score every byte (--add-bos auto or yes, with a model that has a BOS token)", bh.ID, d.ID)
			}
			w := float64(d.Bytes)
			t.base[d.ID] = baseRec{n: d.Bits, d: w}
			cfg.W += w
			weights[i] = w
		}
		// the longest documents are scored first, whole; the rest's
		// residual bound scales with the longest of them
		first, resid := sequential.Documents(weights)
		t.first = make(map[string]bool, len(first))
		for _, i := range first {
			t.first[base.Docs[i].ID] = true
		}
		t.resid = resid
		cfg.First, cfg.Resid = len(first), resid
	case runfile.TestProbes:
		t.noun, t.scale = "item", 100
		cfg.MinEffect /= t.scale
		cfg.Unit = true // a paired difference of correctness is −1, 0 or 1
		for _, it := range base.Items {
			t.base[it.ID] = baseRec{n: b2f(it.Correct), d: 1}
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

// newSpanTracker is NewTracker for a Fresh Text run over spans: the
// units are every window's scored span of the baseline's documents
// (runfile.SplitSpans), in no stratum, and the bound on the spread of the
// spans' residual bits is scaled by a pilot of the first spans
// (sequential.Config.Pilot).
func newSpanTracker(base *runfile.Run, s runfile.Sequential) (*Tracker, error) {
	bh := base.Header
	if bh.Test != runfile.TestFresh {
		return nil, fmt.Errorf("baseline run %s: a %s run has no spans", bh.ID, bh.Test)
	}
	if err := spanReady(base); err != nil {
		return nil, err
	}
	t := &Tracker{test: runfile.TestFresh, scale: 1, noun: "span", base: map[string]baseRec{}, seen: map[string]bool{},
		spans: make(map[string][]string, len(base.Docs))}
	var w float64
	for i := range base.Docs {
		ids := []string{}
		for _, u := range runfile.SplitSpans(&base.Docs[i]) {
			t.base[u.ID] = baseRec{u.Bits, float64(u.Bytes), u.Tokens}
			ids = append(ids, u.ID)
			w += float64(u.Bytes)
		}
		t.spans[base.Docs[i].ID] = ids
	}
	if len(t.base) != s.Total {
		return nil, fmt.Errorf("baseline run %s holds %d spans of the %d in the set: --until decided needs a baseline that scored the whole set", bh.ID, len(t.base), s.Total)
	}
	pilot := min(sequential.DefaultPilot, s.Total)
	seq, err := sequential.New(sequential.Config{N: s.Total, W: w, Level: s.Level, MinEffect: s.MinEffect, First: pilot, Pilot: pilot})
	if err != nil {
		return nil, fmt.Errorf("baseline run %s: %w", bh.ID, err)
	}
	t.seq = seq
	return t, nil
}

// spanReady says why base cannot anchor a run over spans, if it cannot:
// a document scored without BOS, or with bytes but no spans recorded (a
// run older than spans).
func spanReady(base *runfile.Run) error {
	for i := range base.Docs {
		d := &base.Docs[i]
		switch {
		case d.FirstUnscored:
			return fmt.Errorf("baseline run %s document %s: scored without BOS, so its byte count depends on the tokenizer; --until decided needs both runs to score every byte (--add-bos auto or yes, with a model that has a BOS token)", base.Header.ID, d.ID)
		case d.Bytes > 0 && len(d.Spans) == 0:
			return fmt.Errorf("baseline run %s document %s: no spans recorded (a run before spans were)", base.Header.ID, d.ID)
		}
	}
	return nil
}

// Has reports whether the baseline holds the record id, or, over spans,
// the document id.
func (t *Tracker) Has(id string) bool {
	if _, ok := t.spans[id]; ok {
		return true
	}
	_, ok := t.base[id]
	return ok
}

// Add takes the head's next record in the scored order: a runfile.Doc or
// a runfile.Item.
func (t *Tracker) Add(rec any) error {
	var id string
	var n, d float64
	tokens := 0
	switch r := rec.(type) {
	case runfile.Doc:
		id, n, d, tokens = r.ID, r.Bits, float64(r.Bytes), r.Tokens
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
	case t.spans != nil && tokens != b.tokens:
		return fmt.Errorf("sequential: span %s: the head scored %d tokens, the baseline %d; --until decided over spans pairs the same windows, so both runs need the same tokenizer, window and stride", id, tokens, b.tokens)
	}
	if len(t.seen) < len(t.first) && !t.first[id] {
		t.partial = true
	}
	t.seen[id] = true
	t.ids = append(t.ids, id)
	if err := t.seq.Add(n-b.n, b.d); err != nil {
		return fmt.Errorf("%s %s: %w", t.noun, id, err)
	}
	if at := t.seq.Broken(); at != nil && t.broken == "" {
		assumed := fmt.Sprintf("%.4g bits off the whole set's change per byte times its bytes, the most the stopping rule assumes of any document after the %d longest", t.resid, len(t.first))
		switch {
		case t.spans != nil:
			t.broken = fmt.Sprintf("span %s spread the spans' changes wider than a root mean square of %.4g bits off the whole set's change per byte times their bytes, the most the stopping rule assumes after raising its bound %d times", t.ids[at[0]-1], t.seq.Resid(), len(t.seq.Raised()))
		case len(at) == 2:
			t.broken = fmt.Sprintf("%ss %s and %s changed so differently that one of them is more than %s", t.noun, t.ids[at[0]-1], t.ids[at[1]-1], assumed)
		default:
			t.broken = fmt.Sprintf("%s %s changed by more than %s, given the others", t.noun, t.ids[at[0]-1], assumed)
		}
	}
	return nil
}

// Broken says which record broke the rule's assumption (Fresh Text's bound
// on a document's residual bits), after which the rule never stops early;
// "" while it holds.
func (t *Tracker) Broken() string { return t.broken }

// Order is the order the run scores ids in (the baseline's set): the
// take-all stratum first, then the rest in the seeded random order; over
// spans, every span of the documents ids in the seeded random order.
func (t *Tracker) Order(ids []string, seed uint64) []string {
	if t.spans != nil {
		var units []string
		for _, id := range ids {
			units = append(units, t.spans[id]...)
		}
		ids = units
	}
	return sequential.Order(ids, t.first, seed)
}

// Decision is compare/sequential's: Beyond, Within, Complete, or "".
func (t *Tracker) Decision() string {
	r, _ := t.seq.Decision()
	if t.partial {
		return "" // a shard never holds the whole set either
	}
	return r
}

// Scored is how many records the tracker has taken.
func (t *Tracker) Scored() int { return t.seq.Scored() }

// Interval is the anytime-valid interval of the whole set's delta, in the
// metric's unit; [0, 0] (nothing to show) while there is none: before the
// take-all stratum is in, or once the assumption broke (see Bounded).
func (t *Tracker) Interval() [2]float64 {
	if !t.Bounded() {
		return [2]float64{}
	}
	lo, hi := t.seq.Interval()
	return [2]float64{t.scale * lo, t.scale * hi}
}

// Bounded says whether the sequence has an interval to show: not before
// the take-all stratum is in, nor in a shard's deal (which holds only
// some of it), nor once the assumption broke.
func (t *Tracker) Bounded() bool {
	lo, hi := t.seq.Interval()
	return !t.partial && !math.IsInf(lo, 0) && !math.IsInf(hi, 0)
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
		Budget: budget, Baseline: base.Header.ID, Total: base.Len(), Bytes: runfile.CostOf(nil, base.Docs, nil).Bytes}
	if test == runfile.TestFresh && spanReady(base) == nil {
		// the baseline recorded its windows' spans: sample those, small
		// and alike in size, instead of whole documents
		h.Unit, h.Total = runfile.UnitSpan, 0
		for i := range base.Docs {
			h.Total += len(base.Docs[i].Spans)
		}
	}
	t, err := NewTracker(base, test, h)
	return h, t, err
}
