// Package sequential is the anytime-valid paired comparison behind
// `--until decided`: a confidence sequence for the full set's paired delta
// while the records of a finite set are scored one at a time, and the rule
// that stops scoring once the sequence decides.
//
// The set holds N records; record i has a paired difference d_i (head bits
// minus base bits of a document; head correct minus base correct of an
// item) and a weight w_i known before scoring (the document's bytes; 1 for
// an item), W = Σw_i. The target is θ = Σd_i/W, the delta the whole set
// would give.
//
// The order. The First records (the heaviest documents, the take-all
// stratum of survey sampling) are scored first, in a fixed order; their
// sum enters exactly, so no document whose share of the bytes could swing
// the total is left to chance. The rest come in a seeded uniformly random
// order without replacement.
//
// The sequence. For a candidate θ, the residual x_i = d_i − θw_i of the
// next random record has, given what was scored, the known mean
// μ_i(θ) = (θ·Σw − Σd)/(records left), sums over the records scored
// (Waudby-Smith and Ramdas 2020). Let ξ_i(θ) = (x_i − μ_i(θ))/S_i, where
// S_i bounds |x_i − μ_i| at the true θ while the interval so far holds it.
// With S_i and a bet λ_i ∈ [0, ½] fixed before the record is seen,
// Π(1 + λ_iξ_i) and Π(1 − λ_iξ_i) are nonnegative martingales at the true
// θ up to the first miss (Waudby-Smith and Ramdas 2023, betting
// confidence sequences), so by Ville's inequality neither ever reaches
// 2/α with more than probability α/2. Each factor's logarithm is at least
// λξ − ψ(λ)ξ², ψ(λ) = −log(1−λ) − λ, for |ξ| ≤ 1 (Fan, Grama and Liu
// 2015); summed, that lower bound is a quadratic in θ, and since the
// capital moves monotonically in θ, every θ on the far side of a root
// where the bound reaches log(2/α) is rejected too. The interval is the
// running intersection of the survivors: O(1) per record, exact at the
// last record, and valid at every look with no approximation, given S.
//
// What S rests on. An item's difference is −1, 0 or 1, so S ≤ 2 is a fact
// and the Probe Suite's guarantee assumes nothing but the random order.
// A document's residual has no such bound; the rule assumes one
// (Config.Resid: no document of the random part has |d_i − θw_i| above
// it) and checks it on every record: once no θ fits every document scored
// within that bound, or a document fits none in the interval, the
// assumption is broken, the sequence stops deciding, and the run scores
// everything (Broken says which records).
//
// Spans. A fixed bound in bits per byte breaks exactly when a change is
// large and uneven, when a verdict should come first, and a bound on the
// largest residual caps every bet at one over it: on spans with heavy
// tails (the largest residual ten times the root mean square) two
// half-widths took 55-58% of the real files' bytes with that cap and
// 32-43% without (BENCHMARKS.md). So over spans (Config.Pilot) the rule
// assumes a bound on the spread instead of the range:
// Σ_all (d_i − θw_i)² ≤ V at the true θ, V being VarScale times
// the mean square of a pilot (the first Pilot records of the random order,
// at least PilotShare of the set, entered exactly) times N. Given it, the
// variance of the next residual given the past is at most
// σ̄² = (V − Σ_scored x²)/left − μ², known for every θ, and since
// exp(y − y²/6) ≤ 1 + y + y²/3 for every real y (Delyon 2009), the process
// exp Σ(ηX − η²X²/6 − η²σ̄²/3), X = x − μ, is a nonnegative supermartingale
// at the true θ for any predictable η of any size, so no bet is capped.
// Its logarithm is a quadratic in θ, as is the assumption itself
// (Σ_scored x² + (Σ_scored x)²/left ≤ V, which rejects the θ no spread
// within V allows); the interval is the hull of the θ that neither side's
// capital (η ≥ 0 and η ≤ 0) rejects at 2/α. When no θ fits the assumption,
// or the scored spans' mean square already exceeds V/N, the sequence
// starts again from there, conditioned on everything scored, with V at
// least doubled; the j-th sequence holds α/2^j, so together they keep α.
package sequential

import (
	"fmt"
	"math"
	"sort"

	"github.com/udgamlabs/udgam-ci/internal/splitmix"
)

// Defaults of a sequential comparison.
const (
	// DefaultMinRecords is the fewest records of the random part scored
	// before the rule may stop: the interval is valid from the first, but
	// a verdict on a few dozen records convinces nobody.
	DefaultMinRecords = 50
	// DefaultSeed seeds the order wherever none is asked for, so every
	// model's sequential run of a set scores it in the same order.
	DefaultSeed uint64 = 2026
	// ResidPerByte is Fresh Text's assumption, in bits per byte of the
	// longest document of the random part: no such document's change in
	// bits differs from the whole set's change per byte times its bytes by
	// more than this many bits per byte of that longest document.
	ResidPerByte = 0.2

	// DefaultPilot is the fewest records of a set of spans (Config.Pilot)
	// that enter exactly before the first bet, to scale the bound.
	DefaultPilot = 30
	// PilotShare is the least share of a set of spans the pilot takes: a
	// heavy tail's spread needs more than a few dozen spans to show.
	PilotShare = 0.1
	// VarScale is the span rule's assumption: the whole set's sum of
	// squared residuals, (d_i − θw_i)² at its θ, is at most this many
	// times the pilot's mean square (at the pilot's own delta) times N.
	VarScale = 1.5
	// maxRaises is how many times a span sequence starts again with a
	// larger bound before a break ends it, as it ends a document one.
	maxRaises = 8

	// takeAllMean and takeAllShare pick the take-all stratum: documents
	// longer than takeAllMean times the mean, at most takeAllShare of the
	// set (the longest).
	takeAllMean  = 2
	takeAllShare = 0.1
	// tuneShare is where, as a share of the random part, the bets are
	// sized to be tightest.
	tuneShare = 0.2
	// maxBet caps λ: at ½ the bound λξ − ψ(λ)ξ² rises on all of [−1, 1].
	maxBet = 0.5
)

// Stop reasons, as the run header and `compare --json` carry them.
const (
	Beyond   = "beyond"   // the sequence lies wholly beyond min-effect on one side
	Within   = "within"   // wholly inside ±min-effect: no change that matters
	Budget   = "budget"   // the budget ran out first
	Complete = "complete" // every record was scored: the exact value
	Stopped  = "stopped"  // scoring ended otherwise (interrupted, or not yet resumed)
)

// Config is one sequential comparison's fixed parameters.
type Config struct {
	N          int     // records in the full set
	W          float64 // sum of every record's weight, known before scoring
	Level      float64 // confidence level in (0,1), e.g. 0.95
	MinEffect  float64 // in the unit of Σd/W; 0 for none
	MinRecords int     // of the random part; 0: DefaultMinRecords
	// First is how many records come first in the order (the take-all
	// stratum); they enter exactly, and no interval is given before the
	// last of them.
	First int
	// Unit says every difference is within ±its weight (|d_i| ≤ w_i, a
	// difference of correctness): a fact, nothing assumed.
	Unit bool
	// Resid, when Unit is false, is the assumption: every record after
	// the first First has |d_i − θw_i| ≤ Resid at the whole set's θ.
	Resid float64
	// Pilot, when Resid is 0, makes the first records of the order a
	// pilot that scales the bound (First is then Pilot): Pilot of them,
	// or PilotShare of the set if more. The bound V on the whole set's
	// Σ(d_i − θw_i)² becomes VarScale times N times their mean square at
	// their own delta.
	Pilot int
}

func (c Config) validate() error {
	switch {
	case c.N < 1:
		return fmt.Errorf("sequential: the set has %d records", c.N)
	case !(c.W > 0):
		return fmt.Errorf("sequential: total weight %v, want more than 0", c.W)
	case !(c.Level > 0 && c.Level < 1):
		return fmt.Errorf("sequential: level %v, want between 0 and 1", c.Level)
	case c.MinEffect < 0 || math.IsNaN(c.MinEffect):
		return fmt.Errorf("sequential: min-effect %v, want 0 or more", c.MinEffect)
	case c.First < 0 || c.First > c.N:
		return fmt.Errorf("sequential: %d records first of %d", c.First, c.N)
	case c.Pilot < 0 || c.Pilot > 0 && (c.Unit || c.Resid != 0 || c.First != c.Pilot):
		return fmt.Errorf("sequential: a pilot of %d records with a bound of %v, %d records first", c.Pilot, c.Resid, c.First)
	case !c.Unit && c.Pilot == 0 && !(c.Resid > 0):
		return fmt.Errorf("sequential: residual bound %v, want more than 0", c.Resid)
	}
	return nil
}

// Sequence is the running state: O(1) per record.
type Sequence struct {
	cfg    Config
	logA   float64 // log(2/α): each side holds α/2
	tune   float64 // records of the random part the bets are sized for
	t      int
	sd, sw float64 // Σd and Σw over the records scored
	// The two capitals' summed lower bound, λξ ∓ ψξ² with ξ = (p − θq)/S:
	// a1 = Σλp/S, b1 = Σλq/S, c2 = Σψp²/S², c1 = Σψpq/S², c0 = Σψq²/S².
	a1, b1, c2, c1, c0 float64
	v2                 float64 // Σ(p − θ̂q)², θ̂ the estimate of its time, for sizing the bets
	lo, hi             float64 // the running intersection
	flo, fhi           float64 // the θ every random record scored allows under Resid
	floAt, fhiAt       int     // the records (1-based) that set flo and fhi
	broken             []int   // the records that broke the assumption
	// A span sequence (Pilot) keeps Σd², Σdw and Σw² over the records
	// scored, so Σ(d − θw)² is a quadratic in θ; V, the bound on it over
	// the whole set; the two capitals' log lower bounds, quadratics in θ;
	// the mean square the bets are sized by (vs over vn records); and the
	// records that raised V.
	sdd, sdw, sww float64
	v             float64
	up, down      quad
	vs, vn        float64
	raised        []int
	minAt         int // the fewest records before a decision: First+MinRecords at the start
}

// quad is a + bθ + cθ².
type quad struct{ a, b, c float64 }

func (q quad) at(x float64) float64 { return q.a + (q.b+q.c*x)*x }

// New starts a sequence for cfg.
func New(cfg Config) (*Sequence, error) {
	if cfg.MinRecords == 0 {
		cfg.MinRecords = DefaultMinRecords
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Sequence{cfg: cfg, logA: math.Log(2 / (1 - cfg.Level)),
		lo: math.Inf(-1), hi: math.Inf(1), flo: math.Inf(-1), fhi: math.Inf(1)}
	if cfg.Pilot > 0 {
		// the first span sequence holds half the error, each restart half
		// of what the last held (raise), so together they hold it all
		s.logA += math.Ln2
		s.cfg.Pilot = min(cfg.N, max(cfg.Pilot, int(math.Ceil(PilotShare*float64(cfg.N)))))
		s.cfg.First = s.cfg.Pilot
		cfg = s.cfg
	}
	s.tune = max(float64(cfg.MinRecords), tuneShare*float64(cfg.N-cfg.First))
	s.minAt = cfg.First + cfg.MinRecords
	return s, nil
}

// Add takes the next record in the order: its difference and weight.
func (s *Sequence) Add(d, w float64) error {
	if s.t >= s.cfg.N {
		return fmt.Errorf("sequential: record %d of a set of %d", s.t+1, s.cfg.N)
	}
	if math.IsNaN(d) || math.IsInf(d, 0) || !(w >= 0) || math.IsInf(w, 0) {
		return fmt.Errorf("sequential: record %d: difference %v, weight %v", s.t+1, d, w)
	}
	if s.cfg.Pilot > 0 {
		s.addSpan(d, w)
		return nil
	}
	if s.t >= s.cfg.First {
		s.bet(d, w)
	}
	s.t++
	s.sd += d
	s.sw += w
	if s.t > s.cfg.First && s.broken == nil {
		s.narrow(d, w)
	}
	return nil
}

// Resid is the bound on a record's residual the rule assumes, in the
// unit of d: given; over spans, the root mean square residual over the
// whole set the bound V allows, √(V/N), once the pilot is in (0 before).
func (s *Sequence) Resid() float64 {
	if s.cfg.Pilot > 0 {
		return math.Sqrt(s.v / float64(s.cfg.N))
	}
	return s.cfg.Resid
}

// bet adds a random-part record to the capitals' lower bound.
func (s *Sequence) bet(d, w float64) {
	left := float64(s.cfg.N - s.t) // records left, this one included
	p := d + s.sd/left
	q := w + s.sw/left
	// S bounds |x − μ| ≤ |x| + |μ| at the true θ: |x| ≤ Resid (or, for
	// items, the difference itself is within ±1), and μ, the mean of what
	// is left, is within what the interval so far allows. Until the first
	// miss the true θ is in that interval, so the capital stays valid up
	// to the only time that matters.
	span := s.cfg.Resid
	if s.cfg.Unit {
		span = 1
	}
	m := span
	if !math.IsInf(s.lo, 0) && !math.IsInf(s.hi, 0) {
		// items: μ_d = (θW − Σd)/left; documents: μ = (θΣw − Σd)/left
		sw := s.sw
		if s.cfg.Unit {
			sw = s.cfg.W
		}
		m = min(m, max(math.Abs(s.lo*sw-s.sd), math.Abs(s.hi*sw-s.sd))/left)
	}
	span += m
	// the bet is sized from the records before this one: the variance of
	// the residual at the estimate then, with one pseudo-observation of a
	// quarter of the span squared
	n := float64(s.t - s.cfg.First)
	r := p - s.Estimate()*q
	v := (0.25*span*span + s.v2) / (n + 1)
	lam := min(maxBet, span*math.Sqrt(2*s.logA/(v*s.tune)))
	s.v2 += r * r
	psi := -math.Log1p(-lam) - lam
	k, l := psi/(span*span), lam/span
	s.a1 += l * p
	s.b1 += l * q
	s.c2 += k * p * p
	s.c1 += k * p * q
	s.c0 += k * q * q
}

// narrow intersects the interval with what the records so far reject.
func (s *Sequence) narrow(d, w float64) {
	if !s.cfg.Unit {
		// the record allows only the deltas within Resid/w of its own
		// per-byte difference; the interval so far and every record of the
		// random part before it must leave one of them
		r := s.cfg.Resid
		lo, hi := math.Inf(-1), math.Inf(1)
		if w > 0 {
			lo, hi = (d-r)/w, (d+r)/w
		}
		if lo > s.flo {
			s.flo, s.floAt = lo, s.t
		}
		if hi < s.fhi {
			s.fhi, s.fhiAt = hi, s.t
		}
		switch {
		case s.flo > s.fhi: // two records no single θ fits
			s.broken = []int{min(s.floAt, s.fhiAt), max(s.floAt, s.fhiAt)}
		case lo > s.hi || hi < s.lo || math.Abs(d) > r && w == 0: // outside the interval
			s.broken = []int{s.t}
		}
		if s.broken != nil {
			return
		}
	}
	// lower side: −c0θ² + (2c1 − b1)θ + (a1 − c2 − L) ≥ 0 rejects θ and
	// everything below it; upper side mirrors it
	if r, ok := bigRoot(s.c0, 2*s.c1-s.b1, s.a1-s.c2-s.logA); ok {
		s.lo = max(s.lo, r)
	}
	if r, ok := bigRoot(s.c0, -(2*s.c1 + s.b1), -s.a1-s.c2-s.logA); ok {
		s.hi = min(s.hi, -r)
	}
	// what the records left could still add: |d| ≤ w for items, and
	// |d − θw| ≤ Resid for documents
	left := float64(s.cfg.N - s.t)
	if s.cfg.Unit {
		rest := s.cfg.W - s.sw
		s.lo, s.hi = max(s.lo, (s.sd-rest)/s.cfg.W), min(s.hi, (s.sd+rest)/s.cfg.W)
	} else {
		s.lo, s.hi = max(s.lo, (s.sd-left*s.cfg.Resid)/s.sw), min(s.hi, (s.sd+left*s.cfg.Resid)/s.sw)
	}
}

// bigRoot is the larger root of −aθ² + bθ + c = 0 (a ≥ 0), false when
// there is none: the quadratic never reaches 0.
func bigRoot(a, b, c float64) (float64, bool) {
	if a <= 0 {
		if b > 0 {
			return -c / b, true
		}
		return 0, false
	}
	disc := b*b + 4*a*c
	if disc < 0 {
		return 0, false
	}
	return (b + math.Sqrt(disc)) / (2 * a), true
}

// Scored is how many records have been added.
func (s *Sequence) Scored() int { return s.t }

// Raised lists the records (1-based positions in the order) that broke a
// span sequence's bound and started it again with a larger one.
func (s *Sequence) Raised() []int { return s.raised }

// Broken lists the records (1-based positions in the order) that showed
// the assumption false: two that no single θ fits within Resid, or one
// outside the interval; nil while it holds.
func (s *Sequence) Broken() []int { return s.broken }

// Estimate is Σd/Σw over the records scored: the paired delta on them.
func (s *Sequence) Estimate() float64 {
	if s.sw == 0 {
		return 0
	}
	return s.sd / s.sw
}

// Interval is the sequence at the records scored so far: valid, with the
// others, at level Level at every t at once. It is unbounded before the
// random part starts and once the assumption is broken; after the last
// record it is the exact value.
func (s *Sequence) Interval() (lo, hi float64) {
	switch {
	case s.t == s.cfg.N:
		v := s.sd / s.cfg.W
		return v, v
	case s.broken != nil || s.t <= s.cfg.First:
		return math.Inf(-1), math.Inf(1)
	}
	if s.lo > s.hi { // a miss, or rounding at a point: the estimate
		e := s.Estimate()
		return e, e
	}
	return s.lo, s.hi
}

// Decision says whether the sequence has decided: Beyond (with the sign
// of the delta), Within, Complete, or "" to go on. Before MinRecords of
// the random part, or with the assumption broken, it never stops, unless
// every record is in.
func (s *Sequence) Decision() (reason string, sign int) {
	if s.t == s.cfg.N {
		return Complete, 0
	}
	if s.broken != nil || s.t < s.minAt {
		return "", 0
	}
	lo, hi := s.Interval()
	return decide(lo, hi, s.cfg.MinEffect)
}

// decide is what an interval [lo, hi] decides against a minimum effect m:
// Beyond it either way (with the sign), Within ±m (only when m > 0), or ""
// to go on.
func decide(lo, hi, m float64) (reason string, sign int) {
	switch {
	case lo > m:
		return Beyond, 1
	case hi < -m:
		return Beyond, -1
	case m > 0 && lo > -m && hi < m:
		return Within, 0
	}
	return "", 0
}

// TakeAll is the take-all stratum of weights: the indexes of the records
// scored first (longer than takeAllMean times the mean, at most
// takeAllShare of the set, the longest), and the largest weight of the
// rest, which scales Fresh Text's assumption.
func TakeAll(weights []float64) (first []int, restMax float64) {
	var sum float64
	for _, w := range weights {
		sum += w
	}
	idx := make([]int, len(weights))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return weights[idx[a]] > weights[idx[b]] })
	cut := takeAllMean * sum / float64(max(1, len(weights)))
	k := 0
	for k < len(idx) && float64(k) < takeAllShare*float64(len(weights)) && weights[idx[k]] > cut {
		k++
	}
	if k < len(idx) {
		restMax = weights[idx[k]]
	}
	return idx[:k], restMax
}

// Documents sets up a Fresh Text set with these byte counts: the
// take-all stratum (indexes, scored first) and Config.Resid, the bound on
// the rest's residual bits the rule assumes (ResidPerByte times the
// longest of them, at least one bit).
func Documents(weights []float64) (first []int, resid float64) {
	first, restMax := TakeAll(weights)
	return first, max(1, ResidPerByte*restMax)
}

// Order is the order a set is scored in: first the ids in first (sorted),
// then the others sorted and shuffled by Fisher-Yates with SplitMix64, so
// a seed gives the same order on every machine and for every model.
func Order(ids []string, first map[string]bool, seed uint64) []string {
	var head, out []string
	for _, id := range ids {
		if first[id] {
			head = append(head, id)
		} else {
			out = append(out, id)
		}
	}
	sort.Strings(head)
	sort.Strings(out)
	g := splitmix.New(seed)
	for i := len(out) - 1; i > 0; i-- {
		j := int(g.Below(uint64(i + 1)))
		out[i], out[j] = out[j], out[i]
	}
	return append(head, out...)
}
