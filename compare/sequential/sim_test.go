package sequential

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// The simulations below score synthetic paired sets, shaped like real
// ones, in many seeded random orders and look after every record, as
// `--until decided` does. Their figures are in BENCHMARKS.md
// (go test ./compare/sequential -run Sim -v).

const z95 = 1.959963984540054

// population is one synthetic full set: per-record differences and weights.
type population struct {
	name  string
	d, w  []float64
	bound float64
	theta float64 // Σd/Σw, the full set's delta
	half  float64 // the full set's fixed-sample 95% half-width
}

func newPopulation(name string, d, w []float64, bound float64) population {
	p := population{name: name, d: d, w: w, bound: bound}
	p.finish()
	return p
}

// finish computes θ and the fixed-sample half-width: the normal
// (linearised ratio) interval the paired bootstrap approximates.
func (p *population) finish() {
	var sd, sw float64
	for i := range p.d {
		sd += p.d[i]
		sw += p.w[i]
	}
	p.theta = sd / sw
	var ss float64
	for i := range p.d {
		r := p.d[i] - p.theta*p.w[i]
		ss += r * r
	}
	p.half = z95 * math.Sqrt(ss) / sw
}

// shifted moves every record's per-weight difference by the same amount so
// the full set's delta is exactly theta.
func (p population) shifted(theta float64) population {
	q := p
	q.d = make([]float64, len(p.d))
	for i := range p.d {
		q.d[i] = p.d[i] + (theta-p.theta)*p.w[i]
	}
	q.finish()
	return q
}

// freshPopulation is 1,670 documents like Fresh Text (new Wikipedia
// articles and arXiv abstracts): log-normal byte counts (median 2,000) with
// a Pareto tail of long articles up to 150,000 bytes,
// per-document bits per byte that vary by document, and a paired per-byte
// difference with Student-t (3 degrees of freedom) tails.
func freshPopulation(seed uint64) population {
	g := rand.New(rand.NewPCG(seed, 1))
	const n = 1670
	d, w := make([]float64, n), make([]float64, n)
	for i := range n {
		bytes := math.Exp(math.Log(2000) + 1.0*g.NormFloat64())
		if g.Float64() < 0.02 { // long articles
			bytes *= math.Pow(1-g.Float64(), -1/2.0) * 5
		}
		w[i] = math.Round(min(150_000, max(200, bytes)))
		// per-byte difference: a few hundredths of a bit, heavy tailed,
		// larger on short documents
		tdf := g.NormFloat64() / math.Sqrt((sq(g.NormFloat64())+sq(g.NormFloat64())+sq(g.NormFloat64()))/3)
		u := 0.02*tdf*(1+300/w[i]) + 0.01*g.NormFloat64()
		d[i] = u * w[i]
	}
	return newPopulation("fresh", d, w, 0)
}

func sq(x float64) float64 { return x * x }

// probesPopulation is 2,000 items whose paired difference is −1 (right to
// wrong), +1 (wrong to right) or 0, with flips as common as between two
// checkpoints of one small model (about 15% of items), shifted to the
// delta theta by turning right-to-wrong flips into ties or adding
// wrong-to-right ones.
func probesPopulation(effects float64) population {
	const n, flips = 2000, 300
	// find the number of extra wrong-to-right flips k such that the delta
	// is effects times the full set's half-width (a fixed point)
	k := 0
	for range 50 {
		p := probesWith(n, flips/2, flips/2+k)
		want := int(math.Round(effects * p.half * n))
		if want == k {
			break
		}
		k = want
	}
	return probesWith(n, flips/2, flips/2+k)
}

func probesWith(n, down, up int) population {
	d, w := make([]float64, n), make([]float64, n)
	for i := range n {
		w[i] = 1
		switch {
		case i < down:
			d[i] = -1
		case i < down+up:
			d[i] = 1
		}
	}
	return newPopulation("probes", d, w, 1)
}

// interval is a rule that gives an interval after each record.
type interval interface {
	add(d, w float64)
	interval() (lo, hi float64)
	decision() (string, int)
}

type seqRule struct{ s *Sequence }

func (r seqRule) add(d, w float64)             { _ = r.s.Add(d, w) }
func (r seqRule) interval() (float64, float64) { return r.s.Interval() }
func (r seqRule) decision() (string, int)      { return r.s.Decision() }

// peekRule is the naive rule: the fixed-sample 95% normal interval of the
// paired delta, recomputed after every record, the interval the paired
// bootstrap approximates.
type peekRule struct {
	minRecords    int
	minEffect     float64
	t             int
	sd, sw        float64
	sdd, sdw, sww float64
}

func (r *peekRule) add(d, w float64) {
	r.t++
	r.sd += d
	r.sw += w
	r.sdd += d * d
	r.sdw += d * w
	r.sww += w * w
}

func (r *peekRule) interval() (float64, float64) {
	th := r.sd / r.sw
	ss := max(0, r.sdd-2*th*r.sdw+th*th*r.sww)
	half := z95 * math.Sqrt(ss*float64(r.t)/float64(max(1, r.t-1))) / r.sw
	return th - half, th + half
}

func (r *peekRule) decision() (string, int) {
	if r.t < r.minRecords {
		return "", 0
	}
	lo, hi := r.interval()
	switch {
	case lo > r.minEffect:
		return Beyond, 1
	case hi < -r.minEffect:
		return Beyond, -1
	case r.minEffect > 0 && lo > -r.minEffect && hi < r.minEffect:
		return Within, 0
	}
	return "", 0
}

// outcome of one order.
type outcome struct {
	missed  bool    // θ outside the interval at some look from minRecords on
	stopped float64 // share of records scored when the rule stopped
	verdict string  // "improved" (θ > 0 direction), "regressed", "no change", "undecided"
	wrong   bool
}

// runOrders scores p in orders seeded random orders with the rule made by
// newRule, looking after every record, and stops at the rule's decision
// (or goes on to the end when watch is set, to measure misses at every
// look).
func runOrders(p population, orders int, minEffect float64, newRule func() interval, watch bool) []outcome {
	n := len(p.d)
	perm := make([]int, n)
	out := make([]outcome, orders)
	for o := range orders {
		g := rand.New(rand.NewPCG(uint64(o)+1, 7))
		for i := range perm {
			perm[i] = i
		}
		g.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		r := newRule()
		res := outcome{stopped: 1, verdict: "undecided"}
		decided := false
		for t, i := range perm {
			r.add(p.d[i], p.w[i])
			if t+1 < DefaultMinRecords {
				continue
			}
			lo, hi := r.interval()
			eps := 1e-9 * (math.Abs(p.theta) + p.half) // the exact value at the end, up to rounding
			if p.theta < lo-eps || p.theta > hi+eps {
				res.missed = true
			}
			if decided {
				continue
			}
			reason, sign := r.decision()
			if reason == "" {
				continue
			}
			decided = true
			res.stopped = float64(t+1) / float64(n)
			res.verdict, res.wrong = judge(reason, sign, p.theta, minEffect, 1e-9*p.half)
			if !watch {
				break
			}
		}
		out[o] = res
	}
	return out
}

// judge names a decision and says whether it is wrong about θ.
func judge(reason string, sign int, theta, minEffect, eps float64) (string, bool) {
	switch reason {
	case Beyond:
		if sign > 0 {
			return "up", !(theta > minEffect)
		}
		return "down", !(theta < -minEffect)
	case Within:
		return "no change", !(math.Abs(theta) < minEffect)
	default: // Complete: the exact value, up to rounding
		switch {
		case theta > minEffect+eps:
			return "up", false
		case theta < -minEffect-eps:
			return "down", false
		}
		return "no change", false
	}
}

// orders is how many seeded orders the miss rate is checked over; the
// stopping table uses half as many.
func orders(t *testing.T) int {
	if testing.Short() {
		return 400
	}
	return 2000
}

func newSeq(t *testing.T, p population, minEffect float64) func() interval {
	var w, w2 float64
	for _, x := range p.w {
		w += x
		w2 += x * x
	}
	cfg := Config{N: len(p.d), W: w, W2: w2, Level: 0.95, MinEffect: minEffect, Bound: p.bound}
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
	return func() interval {
		s, _ := New(cfg)
		return seqRule{s}
	}
}

func missRate(os []outcome) float64 {
	m := 0
	for _, o := range os {
		if o.missed {
			m++
		}
	}
	return float64(m) / float64(len(os))
}

func sims() []population {
	return []population{freshPopulation(1), probesPopulation(0)}
}

// missSims are the sets the miss rate is checked on: two draws of Fresh
// Text documents (the second has more of its weight in a few long ones)
// and the probes.
func missSims() []population {
	second := freshPopulation(2)
	second.name = "fresh (second draw)"
	return append(sims(), second)
}

// TestSimMissRate: the sequence holds the full set's delta at every look
// in at least 95% of orders, for a null and for a real effect.
func TestSimMissRate(t *testing.T) {
	t.Parallel()
	for _, base := range missSims() {
		for _, k := range []float64{0, 2} {
			p := base.shifted(k * base.half)
			if base.name == "probes" {
				p = probesPopulation(k)
			}
			rate := missRate(runOrders(p, orders(t), 0, newSeq(t, p, 0), true))
			t.Logf("%s, delta %g x half-width: the full set's delta outside the anytime-valid 95%% sequence at some look in %.1f%% of %d orders", p.name, k, 100*rate, orders(t))
			if rate > 0.05 {
				t.Errorf("%s, delta %g x half-width: miss rate %.3f, want at most 0.05", p.name, k, rate)
			}
		}
	}
}

// TestSimPeekingFails: the fixed-sample interval recomputed after every
// record, the rule the sequence replaces, misses far more than 5% on the
// same sets: the harness above can tell a valid rule from peeking.
func TestSimPeekingFails(t *testing.T) {
	t.Parallel()
	for _, p := range sims() {
		rate := missRate(runOrders(p, orders(t), 0, func() interval { return &peekRule{minRecords: DefaultMinRecords} }, true))
		t.Logf("%s: the fixed-sample 95%% interval recomputed after every record misses the full set's delta at some look in %.1f%% of %d orders", p.name, 100*rate, orders(t))
		if rate < 0.15 {
			t.Errorf("%s: peeking miss rate %.3f, want well above 0.05 (the simulation cannot tell peeking from a valid rule)", p.name, rate)
		}
	}
}

// TestSimStopping reports, for true deltas of 0, 1, 2, 5 and 10 times the
// full set's fixed-sample half-width, how much of the set is scored before
// the rule stops and how often each verdict comes out (min-effect 0 and
// min-effect one half-width), and checks the bars: a wrong verdict
// at most 5% of the time, and a delta of five half-widths decided on median
// within a quarter of the records.
func TestSimStopping(t *testing.T) {
	t.Parallel()
	var table strings.Builder
	table.WriteString("| test | delta / half-width | min-effect | median scored | 90th pct scored | up | down | no change | wrong |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, base := range sims() {
		for _, me := range []float64{0, 1} {
			for _, k := range []float64{0, 1, 2, 5, 10} {
				p := base.shifted(k * base.half)
				if base.name == "probes" {
					p = probesPopulation(k)
				}
				minEffect := me * p.half
				os := runOrders(p, orders(t)/2, minEffect, newSeq(t, p, minEffect), false)
				fr := make([]float64, len(os))
				count := map[string]int{}
				wrong := 0
				for i, o := range os {
					fr[i] = o.stopped
					count[o.verdict]++
					if o.wrong {
						wrong++
					}
				}
				sort.Float64s(fr)
				med, p90 := fr[len(fr)/2], fr[len(fr)*9/10]
				pc := func(n int) string { return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(len(os))) }
				fmt.Fprintf(&table, "| %s | %g | %g x | %.3f | %.3f | %s | %s | %s | %s |\n", p.name, k, me, med, p90,
					pc(count["up"]), pc(count["down"]), pc(count["no change"]), pc(wrong))
				if w := float64(wrong) / float64(len(os)); w > 0.05 {
					t.Errorf("%s, delta %g x, min-effect %g x: wrong verdict in %.3f of orders, want at most 0.05", p.name, k, me, w)
				}
				if k == 5 && med > 0.25 {
					t.Errorf("%s, delta 5 x half-width, min-effect %g x: median share scored %.3f, want at most 0.25", p.name, me, med)
				}
			}
		}
	}
	t.Logf("%d seeded orders each; shares of the set scored before stopping:\n%s", orders(t)/2, table.String())
}
