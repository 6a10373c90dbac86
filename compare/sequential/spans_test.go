package sequential

import (
	"math"
	"sort"
	"strings"
	"testing"
)

// spanBytes is a window's scored span in the simulations: 1,024 tokens of
// about four bytes; a document's first window scores twice that.
const spanBytes = 4096

// spans splits every document of p into the spans its windows score (the
// first up to 2·spanBytes, then spanBytes each, the last what is left),
// each carrying its bytes' share of the document's difference: every span
// of a document changes alike, so the spans of one long document that
// changes unlike the rest all stand out together, the hard case.
func (p population) spans() population {
	var d, w []float64
	for i := range p.d {
		left, first := p.w[i], true
		for left > 0 {
			n := float64(spanBytes)
			if first {
				n *= 2
			}
			n = min(n, left)
			d, w = append(d, p.d[i]*n/p.w[i]), append(w, n)
			left -= n
			first = false
		}
	}
	q := newPopulation(p.name+", in spans", d, w, false)
	q.docHalf = p.half
	return q
}

// spanRule is the rule as compare.Tracker sets it up for spans: no
// stratum first, a pilot of the random order's first spans (DefaultPilot,
// or PilotShare of the set if more) scales the bound.
var spanRule = rule{
	name:  "betting over spans",
	from:  1,
	first: func(population) []int { return nil },
	make: func(p population, minEffect float64) func() interval {
		cfg := Config{N: len(p.d), Level: 0.95, MinEffect: minEffect, First: DefaultPilot, Pilot: DefaultPilot}
		for _, x := range p.w {
			cfg.W += x
		}
		return func() interval {
			s, err := New(cfg)
			if err != nil {
				panic(err)
			}
			return seqRule{s}
		}
	},
}

// spanSets are the hard sets in spans, each at a delta of 0, with the
// unlike real pair also at its own large delta and the fresh draw at two
// half-widths.
func spanSets(t testing.TB) []population {
	var sets []population
	for _, p := range hardSets(t) {
		if !p.unit && math.Abs(p.theta) < 1e-9*p.half {
			sets = append(sets, p.spans().shifted(0))
		}
	}
	un := realPopulation(t, false).spans()
	f := freshPopulation(1).spans()
	return append(sets, un, f.shifted(2*f.half))
}

// TestSimSpansMissRate: over spans, on every hard set, the interval holds
// the whole set's delta at every look in at least 95% of the orders (up
// to simulation noise), and a decision is wrong in at most 5%.
func TestSimSpansMissRate(t *testing.T) {
	t.Parallel()
	for _, p := range spanSets(t) {
		checkMisses(t, p, spanRule)
	}
}

// TestSimSpansStopping reports the share of the bytes scored before the
// rule stops over spans, for deltas of 0 to 10 half-widths (of the
// documents' fixed-sample interval), and checks the bars: five half-widths
// decided within a median quarter of the bytes, two within half, on the
// synthetic sets, the real-file fixture, a document of 5% of the bytes at
// 6 sd and long documents carrying the change; a wrong verdict at most 5%
// of the time.
func TestSimSpansStopping(t *testing.T) {
	t.Parallel()
	var table strings.Builder
	table.WriteString("| set | delta / half-width | min-effect | median bytes scored | 90th pct | up | down | no change | wrong | assumption broken |\n|---|---|---|---|---|---|---|---|---|---|\n")
	bases := []population{freshPopulation(1).spans(), freshPopulation(2).spans(), realPopulation(t, true).spans(),
		realPopulation(t, false).spans(), outlierPopulation(0.05, 6).spans(), longCarryPopulation().spans()}
	effects := []float64{0, 1, 2, 5, 10}
	if !*simFull {
		effects = []float64{2, 5}
	}
	for _, base := range bases {
		for _, me := range []float64{0, 1} {
			for _, k := range effects {
				p := base.shifted(k * base.docHalf)
				minEffect := me * p.docHalf
				med, wrong, n := stopRow(&table, base.name, k, me, p, minEffect, spanRule, func(o outcome) float64 { return o.weight }, false)
				if tooMany(wrong, n) {
					t.Errorf("%s, delta %g x, min-effect %g x: wrong verdict in %d of %d orders", base.name, k, me, wrong, n)
				}
				// the bars, on every set: the real files' spans have
				// the heaviest tails (the largest residual 7.7 and 11.6 times
				// the root mean square), which a bound on the range, capping
				// every bet, did not meet (two half-widths 55-58% of the bytes)
				bar := map[float64]float64{5: 0.25, 2: 0.5}[k]
				if me == 0 && bar > 0 && med > bar {
					t.Errorf("%s, delta %g x half-width: median share of the bytes scored %.3f, want at most %g", base.name, k, med, bar)
				}
			}
		}
	}
	t.Logf("%d seeded orders each; shares of the bytes scored before stopping, over spans:\n%s", stopOrders(), table.String())
}

// TestSimSpansLargeUnevenChange: a large, clear change between models
// whose documents change by very different amounts per byte (the real
// files' unlike byte-bigram pair, -0.44 to +0.75 bits per byte from the
// 5th to the 95th percentile, moved to a whole-set delta of half a bit per
// byte, as between an early and a late checkpoint): the span rule's bound
// scales with the spread, so it stops within a quarter of the bytes,
// where the fixed bound over documents breaks and scores them all.
func TestSimSpansLargeUnevenChange(t *testing.T) {
	t.Parallel()
	docs := realPopulation(t, false).shifted(0.5)
	p := docs.spans()
	os := runOrders(p, stopOrders(), 0, spanRule, false)
	fr := make([]float64, len(os))
	for i, o := range os {
		fr[i] = o.weight
	}
	sort.Float64s(fr)
	_, wrong, _ := count(os)
	fixed := runOrders(docs, 50, 0, theRule, false)
	_, _, fixedBroken := count(fixed)
	t.Logf("%s: delta %.3g (%.0f half-widths), median share of the bytes scored %.3f; the fixed bound over documents broke in %d of %d orders",
		p.name, p.theta, p.theta/docs.half, fr[len(fr)/2], fixedBroken, len(fixed))
	if med := fr[len(fr)/2]; med > 0.25 || wrong > 0 {
		t.Errorf("median share of the bytes %.3f (want at most 0.25), %d wrong verdicts", med, wrong)
	}
	if fixedBroken < len(fixed)/2 {
		t.Errorf("the fixed bound broke in only %d of %d orders: this set no longer shows what the spans' bound is for", fixedBroken, len(fixed))
	}
}

// TestSimSpansPeekingFails: the naive rule over spans, the fixed-sample
// normal interval recomputed after every span, misses the whole set's
// delta far more than 5% on the same sets, so the harness that passes the
// span rule fails it.
func TestSimSpansPeekingFails(t *testing.T) {
	t.Parallel()
	for _, p := range []population{freshPopulation(1).spans().shifted(0), realPopulation(t, true).spans().shifted(0)} {
		n := missOrders()
		missed, _, _ := count(runOrders(p, n, 0, peekingRule, true))
		t.Logf("%s: the fixed-sample interval after every span missed at some look in %.1f%% of %d orders", p.name, 100*float64(missed)/float64(n), n)
		if !tooMany(missed, n) {
			t.Errorf("%s: peeking missed in %d of %d orders, not shown to be more than 5%%", p.name, missed, n)
		}
	}
}
