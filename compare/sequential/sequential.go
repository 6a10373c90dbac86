// Package sequential is the anytime-valid paired comparison behind
// `--until decided`: a confidence sequence for the full set's paired delta
// while the records of a finite set are scored one at a time in a seeded
// random order, and the rule that stops scoring once the sequence decides.
//
// The construction. The set holds N records; record i has a paired
// difference d_i (head bits minus base bits of a document; head correct
// minus base correct of an item) and a weight w_i known before scoring
// (the document's bytes; 1 for an item), W = Σw_i. The target is
// θ = Σd_i/W, the delta the full set would give. For any θ the residuals
// x_i = d_i − θw_i have population mean 0 exactly at the true θ, and when
// records come in a uniformly random order without replacement the next
// residual's conditional mean is minus the sum of those seen over the
// number left (Waudby-Smith and Ramdas 2020). So
// M_t = Σ_{i≤t} [x_i + S_{i−1}/(N−i+1)] is a martingale at the true θ,
// linear in θ: M_t = A_t − θC_t. Its boundary is Robbins' normal mixture
// on the standardised sum, with the running standard deviation of the
// residuals (the asymptotic confidence sequence of Waudby-Smith, Wu,
// Ramdas, Karampatziakis and Mineiro 2021): |M_t| ≤ σ̂_t·B(t),
// B(t)² = (tρ²+1)/ρ²·(2 log(1/α) + log(tρ²+1)). Solving for θ gives
// A_t/C_t ± σ̂_t·B(t)/C_t; C_t grows like N·log(N/(N−t)), so the interval
// narrows as the unscored part shrinks, and at t = N it is the exact
// full-set value.
//
// What it assumes: the order is uniformly random and fixed before scoring
// (the seed), the weights are known up front, and the guarantee is
// asymptotic: the normal approximation of the residuals' sum must hold
// from the first look on. That is why no decision is taken before
// MinRecords records and why σ̂ carries one pseudo-observation as large as
// the largest residual seen (or the known bound of a bounded difference),
// and why σ̂² is at least the residual variance per squared byte times the
// mean squared bytes of the whole set and of the documents not yet scored
// (all known up front): heavy-tailed documents would otherwise make
// intervals too narrow while the longest ones are unseen. The simulation
// tests measure the miss rate on sets shaped like real ones.
package sequential

import (
	"fmt"
	"math"
	"sort"

	"github.com/udgamlabs/udgam-ci/internal/splitmix"
)

// Defaults of a sequential comparison.
const (
	// DefaultMinRecords is the fewest records scored before the rule may
	// stop: the normal approximation needs a few dozen residuals.
	DefaultMinRecords = 50
	// DefaultSeed seeds the order wherever none is asked for, so every
	// model's sequential run of a set scores it in the same order.
	DefaultSeed uint64 = 2026
	// tuneShare is where, as a share of the set, the mixture is tightest.
	tuneShare = 0.1
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
	N int     // records in the full set
	W float64 // sum of every record's weight, known before scoring
	// W2 is the sum of every record's squared weight, known before
	// scoring; 0 to leave the weight-scaled variance out.
	W2         float64
	Level      float64 // confidence level in (0,1), e.g. 0.95
	MinEffect  float64 // in the unit of Σd/W; 0 for none
	MinRecords int     // 0: DefaultMinRecords
	// Bound, when the differences are bounded (|d_i − θw_i| ≤ Bound for
	// every θ in range), is the pseudo-observation's size before any
	// residual is seen; 0 when unbounded.
	Bound float64
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
	}
	return nil
}

// Sequence is the running state: O(1) per record.
type Sequence struct {
	cfg   Config
	rho2  float64
	t     int
	sd    float64 // Σd
	sw    float64 // Σw
	a, c  float64 // A_t, C_t
	sdd   float64 // Σd²
	sdw   float64 // Σdw
	sww   float64 // Σw²
	maxR2 float64 // the largest squared residual seen, the pseudo-observation
}

// New starts a sequence for cfg.
func New(cfg Config) (*Sequence, error) {
	if cfg.MinRecords == 0 {
		cfg.MinRecords = DefaultMinRecords
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l := 2 * math.Log(1/(1-cfg.Level))
	tStar := max(float64(cfg.MinRecords), tuneShare*float64(cfg.N))
	return &Sequence{cfg: cfg, rho2: (l + math.Log(l+1)) / tStar}, nil
}

// Add takes the next record in the order: its difference and weight.
func (s *Sequence) Add(d, w float64) error {
	if s.t >= s.cfg.N {
		return fmt.Errorf("sequential: record %d of a set of %d", s.t+1, s.cfg.N)
	}
	left := float64(s.cfg.N - s.t) // N − i + 1 for record i = t+1
	s.a += d + s.sd/left
	s.c += w + s.sw/left
	s.t++
	s.sd += d
	s.sw += w
	s.sdd += d * d
	s.sdw += d * w
	s.sww += w * w
	r := d - s.Estimate()*w // the residual at the estimate of its time
	s.maxR2 = max(s.maxR2, r*r)
	return nil
}

// Scored is how many records have been added.
func (s *Sequence) Scored() int { return s.t }

// Estimate is Σd/Σw over the records scored: the paired delta on them.
func (s *Sequence) Estimate() float64 {
	if s.sw == 0 {
		return 0
	}
	return s.sd / s.sw
}

// sigma2 is the residuals' running variance with one pseudo-observation
// the size of the largest residual seen, or of Bound.
func (s *Sequence) sigma2() float64 {
	if s.t == 0 {
		return s.cfg.Bound * s.cfg.Bound
	}
	th := s.Estimate()
	ss := max(0, s.sdd-2*th*s.sdw+th*th*s.sww) // Σ(d − θ̂w)², whose mean is 0
	ss += max(s.maxR2, s.cfg.Bound*s.cfg.Bound)
	v := ss / float64(s.t)
	if s.cfg.W2 > 0 && s.sww > 0 {
		// Residuals grow with the weight (a long document's bits), and the
		// longest documents are the rarest: scaled by the known squared
		// weights of the whole set, the variance counts those not yet seen.
		k := ss / s.sww
		v = max(v, k*s.cfg.W2/float64(s.cfg.N))
		if left := s.cfg.N - s.t; left > 0 {
			// Late increments carry the variance of the records left, which
			// is large while a long document is among them.
			v = max(v, k*max(0, s.cfg.W2-s.sww)/float64(left))
		}
	}
	return v
}

// Interval is the sequence at the records scored so far: valid, with the
// others, at level Level at every t at once. Before any record it is
// unbounded; after the last it is the exact value.
func (s *Sequence) Interval() (lo, hi float64) {
	if s.t == 0 {
		return math.Inf(-1), math.Inf(1)
	}
	if s.t == s.cfg.N {
		v := s.sd / s.cfg.W
		return v, v
	}
	center := s.a / s.c
	half := math.Sqrt(s.sigma2()) * s.boundary() / s.c
	return center - half, center + half
}

// boundary is Robbins' normal-mixture boundary B(t) on the standardised sum.
func (s *Sequence) boundary() float64 {
	t := float64(s.t)
	v := t*s.rho2 + 1
	return math.Sqrt(v / s.rho2 * (2*math.Log(1/(1-s.cfg.Level)) + math.Log(v)))
}

// Decision says whether the sequence has decided: Beyond (with the sign
// of the delta), Within, Complete, or "" to go on. Before MinRecords it
// never stops, unless every record is in.
func (s *Sequence) Decision() (reason string, sign int) {
	if s.t == s.cfg.N {
		return Complete, 0
	}
	if s.t < s.cfg.MinRecords {
		return "", 0
	}
	lo, hi := s.Interval()
	m := s.cfg.MinEffect
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

// Order is the seeded random order of a set: ids sorted, then shuffled by
// Fisher-Yates with SplitMix64, so a seed gives the same order on every
// machine and for every model.
func Order(ids []string, seed uint64) []string {
	out := append([]string(nil), ids...)
	sort.Strings(out)
	g := splitmix.New(seed)
	for i := len(out) - 1; i > 0; i-- {
		j := int(g.Below(uint64(i + 1)))
		out[i], out[j] = out[j], out[i]
	}
	return out
}
