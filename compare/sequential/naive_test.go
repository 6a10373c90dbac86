package sequential

import (
	"math"
	"testing"
)

// mixtureRule is the rule this package had before the betting sequence
// (issue 37), kept here so the simulations show they can tell it from a
// valid one: the martingale of residuals with Robbins' normal-mixture
// boundary on the standardised sum, its variance the running variance of
// the residuals (with a pseudo-observation as large as the largest seen,
// and floors from the known squared weights), every record in random
// order. Its guarantee was a normal approximation.
type mixtureRule struct {
	n, minRecords      int
	w, w2, bound, rho2 float64
	minEffect, logA    float64
	t                  int
	sd, sw, a, c       float64
	sdd, sdw, sww, mr2 float64
}

var oldRule = rule{
	name:  "normal mixture (before issue 37)",
	from:  DefaultMinRecords, // it decided from the 50th record on
	first: func(population) []int { return nil },
	make: func(p population, minEffect float64) func() interval {
		var w, w2 float64
		for _, x := range p.w {
			w, w2 = w+x, w2+x*x
		}
		bound := 0.0
		if p.unit {
			bound = 1
		}
		l := 2 * math.Log(1/0.05)
		tStar := max(DefaultMinRecords, 0.1*float64(len(p.d)))
		return func() interval {
			return &mixtureRule{n: len(p.d), minRecords: DefaultMinRecords, w: w, w2: w2, bound: bound,
				rho2: (l + math.Log(l+1)) / tStar, minEffect: minEffect, logA: l / 2}
		}
	},
}

func (r *mixtureRule) est() float64 { return r.sd / r.sw }

func (r *mixtureRule) add(d, w float64) {
	left := float64(r.n - r.t)
	r.a += d + r.sd/left
	r.c += w + r.sw/left
	r.t++
	r.sd, r.sw = r.sd+d, r.sw+w
	r.sdd, r.sdw, r.sww = r.sdd+d*d, r.sdw+d*w, r.sww+w*w
	res := d - r.est()*w
	r.mr2 = max(r.mr2, res*res)
}

func (r *mixtureRule) interval() (float64, float64) {
	if r.t == r.n {
		return r.sd / r.w, r.sd / r.w
	}
	th := r.est()
	ss := max(0, r.sdd-2*th*r.sdw+th*th*r.sww) + max(r.mr2, r.bound*r.bound)
	v := ss / float64(r.t)
	if !(r.bound > 0) {
		k := ss / r.sww
		v = max(v, k*r.w2/float64(r.n), k*max(0, r.w2-r.sww)/float64(r.n-r.t))
	}
	x := float64(r.t)*r.rho2 + 1
	half := math.Sqrt(v) * math.Sqrt(x/r.rho2*(2*r.logA+math.Log(x))) / r.c
	return r.a/r.c - half, r.a/r.c + half
}

func (r *mixtureRule) decision() (string, int) {
	if r.t == r.n {
		return Complete, 0
	}
	if r.t < r.minRecords {
		return "", 0
	}
	lo, hi := r.interval()
	return decide(lo, hi, r.minEffect)
}

// TestSimNaiveFails: the rule before issue 37 misses more than 5%, beyond
// simulation noise, on the hard sets where it was found to fail (real
// a document of 5% or 10% of the bytes, long documents carrying the
// difference, probes with flips one way), so the harness that passes the betting sequence can fail a rule.
func TestSimNaiveFails(t *testing.T) {
	t.Parallel()
	mustFail := map[string]bool{"one document of 5% of the bytes at 12 sd": true, "one document of 10% of the bytes at 6 sd": true,
		"fresh, documents over 20 KB carry the difference": true, "probes, 0 down 20 up": true}
	for _, p := range hardSets(t) {
		if !mustFail[p.name] && !*simFull { // the others only for BENCHMARKS.md
			continue
		}
		n := missOrders()
		missed, _, _ := count(runOrders(p, n, 0, oldRule, true))
		t.Logf("%s: the normal-mixture rule missed at some look in %.2f%% of %d orders", p.name, 100*float64(missed)/float64(n), n)
		if mustFail[p.name] && !tooMany(missed, n) {
			t.Errorf("%s: the normal-mixture rule missed in %d of %d orders, not shown to be more than 5%%", p.name, missed, n)
		}
	}
}

// peekRule is the fixed-sample 95% normal interval of the paired delta,
// recomputed after every record: the interval the paired bootstrap
// approximates, looked at as a sequential rule.
type peekRule struct {
	t                     int
	sd, sw, sdd, sdw, sw2 float64
}

var peekingRule = rule{
	name:  "fixed-sample interval after every record",
	from:  DefaultMinRecords,
	first: func(population) []int { return nil },
	make: func(population, float64) func() interval {
		return func() interval { return &peekRule{} }
	},
}

func (r *peekRule) add(d, w float64) {
	r.t++
	r.sd, r.sw = r.sd+d, r.sw+w
	r.sdd, r.sdw, r.sw2 = r.sdd+d*d, r.sdw+d*w, r.sw2+w*w
}

func (r *peekRule) interval() (float64, float64) {
	th := r.sd / r.sw
	ss := max(0, r.sdd-2*th*r.sdw+th*th*r.sw2)
	half := z95 * math.Sqrt(ss*float64(r.t)/float64(max(1, r.t-1))) / r.sw
	return th - half, th + half
}

func (r *peekRule) decision() (string, int) { return "", 0 }

// TestSimPeekingFails: re-reading the fixed-sample interval after every
// record misses far more than 5% on ordinary sets, the reason a
// sequential run needs a confidence sequence at all.
func TestSimPeekingFails(t *testing.T) {
	t.Parallel()
	for _, p := range []population{freshPopulation(1).shifted(0), probesPopulation(150, 150)} {
		n := missOrders()
		missed, _, _ := count(runOrders(p, n, 0, peekingRule, true))
		t.Logf("%s: the fixed-sample 95%% interval recomputed after every record missed at some look in %.1f%% of %d orders", p.name, 100*float64(missed)/float64(n), n)
		if float64(missed) < 0.15*float64(n) {
			t.Errorf("%s: peeking missed in %d of %d orders, want well above 5%%", p.name, missed, n)
		}
	}
}
