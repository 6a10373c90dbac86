package sequential

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestOrderIsSeededPermutation(t *testing.T) {
	t.Parallel()
	ids := []string{"d", "a", "c", "b", "e", "f"}
	a := Order(ids, nil, 7)
	b := Order([]string{"f", "e", "d", "c", "b", "a"}, nil, 7)
	if !slices.Equal(a, b) {
		t.Errorf("order depends on the input order: %v vs %v", a, b)
	}
	if slices.Equal(a, Order(ids, nil, 8)) {
		t.Errorf("seeds 7 and 8 give the same order %v", a)
	}
	sorted := slices.Clone(a)
	slices.Sort(sorted)
	if !slices.Equal(sorted, []string{"a", "b", "c", "d", "e", "f"}) {
		t.Errorf("order %v is not a permutation of the ids", a)
	}
	if ids[0] != "d" {
		t.Error("Order changed its argument")
	}
}

// The sequence narrows as records come in and is the exact full-set value
// after the last one.
func TestSequenceShrinksToExactValue(t *testing.T) {
	t.Parallel()
	d := []float64{3, -1, 4, 1, -5, 9, 2, -6, 5, 3, 5, -8, 9, 7, -9}
	w := []float64{10, 20, 10, 30, 20, 50, 10, 40, 20, 10, 30, 60, 20, 10, 40}
	var sd, sw, sw2 float64
	for i := range d {
		sd, sw, sw2 = sd+d[i], sw+w[i], sw2+w[i]*w[i]
	}
	s, err := New(Config{N: len(d), W: sw, Level: 0.95, MinRecords: 5, Resid: 10})
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := s.Interval(); !math.IsInf(lo, -1) || !math.IsInf(hi, 1) {
		t.Errorf("before any record: [%v, %v], want unbounded", lo, hi)
	}
	prev := math.Inf(1)
	for i := range d {
		if r, _ := s.Decision(); r == Complete {
			t.Fatalf("complete after %d of %d", i, len(d))
		}
		if err := s.Add(d[i], w[i]); err != nil {
			t.Fatal(err)
		}
		lo, hi := s.Interval()
		if i >= 4 && hi-lo > prev*1.5 {
			t.Errorf("record %d: width %v jumped from %v", i+1, hi-lo, prev)
		}
		prev = hi - lo
	}
	lo, hi := s.Interval()
	if want := sd / sw; lo != want || hi != want {
		t.Errorf("after the last record: [%v, %v], want exactly %v", lo, hi, want)
	}
	if r, _ := s.Decision(); r != Complete {
		t.Errorf("decision after the last record %q, want %q", r, Complete)
	}
	if err := s.Add(1, 1); err == nil {
		t.Error("a record past the set's size was accepted")
	}
}

func TestNoDecisionBeforeMinRecords(t *testing.T) {
	t.Parallel()
	s, err := New(Config{N: 1000, W: 1000, Level: 0.95, MinEffect: 0.5, Unit: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range DefaultMinRecords - 1 {
		_ = s.Add(0, 1)
		if r, _ := s.Decision(); r != "" {
			t.Fatalf("decided %q after %d records, before the minimum %d", r, i+1, DefaultMinRecords)
		}
	}
	for range 200 {
		_ = s.Add(0, 1)
	}
	// identical runs: within ±0.5 once the bounded pseudo-observation is
	// outweighed
	if r, _ := s.Decision(); r != Within {
		lo, hi := s.Interval()
		t.Errorf("250 equal records with min-effect 0.5: decision %q, interval [%v, %v]", r, lo, hi)
	}
}

func TestConfigRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{
		{N: 0, W: 1, Level: 0.95},
		{N: 5, W: 0, Level: 0.95},
		{N: 5, W: 1, Level: 1},
		{N: 5, W: 1, Level: 0.95, MinEffect: -1},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}

// The take-all stratum is the documents over twice the mean length, at
// most a tenth of the set, the longest first; the order puts them first
// (sorted) and shuffles the rest by the seed.
func TestTakeAllAndOrder(t *testing.T) {
	t.Parallel()
	w := make([]float64, 40)
	for i := range w {
		w[i] = 100
	}
	w[3], w[17], w[21], w[30], w[33] = 5000, 9000, 250, 4000, 300 // mean 545: three over 1,090, capped at 4
	first, restMax := TakeAll(w)
	if !slices.Equal(first, []int{17, 3, 30}) || restMax != 300 {
		t.Errorf("take-all %v, rest's longest %v; want [17 3 30] and 300", first, restMax)
	}
	for i := range w {
		w[i] = float64(1000 + i) // nothing long: none first, and the cap of a tenth holds
	}
	w[0] = 1e6
	w[1], w[2], w[3], w[4], w[5] = 1e6, 1e6, 1e6, 1e6, 1e6
	if first, _ := TakeAll(w); len(first) != 4 {
		t.Errorf("six long documents of 40: %d first, want the cap of 4", len(first))
	}
	ids := []string{"f", "e", "d", "c", "b", "a", "g", "h"}
	o := Order(ids, map[string]bool{"g": true, "c": true}, 7)
	if !slices.Equal(o[:2], []string{"c", "g"}) {
		t.Errorf("order %v: want c and g first", o)
	}
	rest := slices.Clone(o[2:])
	slices.Sort(rest)
	if !slices.Equal(rest, []string{"a", "b", "d", "e", "f", "h"}) || slices.Equal(o, Order(ids, map[string]bool{"g": true, "c": true}, 8)) {
		t.Errorf("order %v: the rest is not a seeded shuffle of the others", o)
	}
}

// Before the take-all stratum is in there is no interval and no decision;
// after a record that contradicts the assumed bound there is none again
// until the exact value at the end.
func TestNoIntervalBeforeTakeAllOrAfterBreak(t *testing.T) {
	t.Parallel()
	const n = 300
	s, err := New(Config{N: n, W: 3*1000 + (n-3)*100, Level: 0.95, MinEffect: 0.5, MinRecords: 5, First: 3, Resid: 20})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_ = s.Add(0, 1000)
		if lo, hi := s.Interval(); !math.IsInf(lo, -1) || !math.IsInf(hi, 1) {
			t.Fatalf("take-all record %d: interval [%v, %v], want none", s.Scored(), lo, hi)
		}
	}
	for range 100 {
		_ = s.Add(0, 100)
	}
	if r, _ := s.Decision(); r != Within || s.Broken() != nil {
		lo, hi := s.Interval()
		t.Fatalf("100 equal documents after the take-all: %q, [%v, %v], broken %v; want within ±0.5", r, lo, hi, s.Broken())
	}
	_ = s.Add(5000, 100) // 50 bits per byte from the others: beyond ±20 bits
	if b := s.Broken(); !slices.Contains(b, 104) {
		t.Errorf("broken by %v, want record 104 among them", b)
	}
	for s.Scored() < n-1 {
		_ = s.Add(0, 100)
		if r, _ := s.Decision(); r != "" {
			t.Fatalf("decided %q after %d with the assumption broken", r, s.Scored())
		}
	}
	_ = s.Add(0, 100)
	if lo, hi := s.Interval(); lo != 5000.0/(3*1000+(n-3)*100) || lo != hi {
		t.Errorf("at the end: [%v, %v], want the exact value", lo, hi)
	}
}

// A span sequence scales its bound from the pilot (VarScale times its
// mean square, over at least PilotShare of the set), gives no interval
// before the pilot is in, and on a record that breaks the bound starts
// again with a larger one instead of giving up; after the last record it
// is the exact value.
func TestSpanPilotScalesAndRaises(t *testing.T) {
	t.Parallel()
	const n, asked = 400, 30
	pilot := int(PilotShare * n) // more than asked: the share wins
	s, err := New(Config{N: n, W: n * 100, Level: 0.95, MinEffect: 0.05, First: asked, Pilot: asked})
	if err != nil {
		t.Fatal(err)
	}
	sd := 0.0
	add := func(d float64) {
		t.Helper()
		if err := s.Add(d, 100); err != nil {
			t.Fatal(err)
		}
		sd += d
	}
	for i := range pilot {
		if lo, hi := s.Interval(); !math.IsInf(lo, -1) || !math.IsInf(hi, 1) || s.Resid() != 0 {
			t.Fatalf("pilot record %d: interval [%v, %v], bound %v; want none yet", i, lo, hi, s.Resid())
		}
		add(float64(1 - 2*(i%2))) // ±1 bit: residual 1 at the pilot's delta 0
	}
	if want := math.Sqrt(VarScale); math.Abs(s.Resid()-want) > 1e-12 {
		t.Fatalf("root mean square bound after the pilot %v, want %v (VarScale times the mean square, 1)", s.Resid(), want)
	}
	for i := range 100 {
		add(float64(1 - 2*(i%2)))
	}
	if r, _ := s.Decision(); r != Within {
		lo, hi := s.Interval()
		t.Fatalf("%d records of ±1 bit on 100 bytes, min-effect 0.05: %q, [%v, %v]; want within", pilot+100, r, lo, hi)
	}
	add(60) // 0.6 bits per byte: the scored spans' spread alone is more than V allows of the set
	// V becomes VarScale times n times the mean square of all so far
	want := math.Sqrt(VarScale * (float64(pilot+100) + 59*59) / float64(pilot+101))
	if s.Broken() != nil || !slices.Contains(s.Raised(), pilot+101) || s.Resid() < 0.99*want {
		t.Fatalf("after an outlier: broken %v, raised %v, bound %v; want raised at %d to at least %v", s.Broken(), s.Raised(), s.Resid(), pilot+101, want)
	}
	if lo, hi := s.Interval(); !math.IsInf(lo, -1) || !math.IsInf(hi, 1) {
		t.Errorf("right after the raise: interval [%v, %v], want none until the next record", lo, hi)
	}
	for s.Scored() < n {
		add(float64(1 - 2*(s.Scored()%2)))
		if lo, hi := s.Interval(); math.IsNaN(lo) || math.IsNaN(hi) || lo > hi {
			t.Fatalf("record %d: interval [%v, %v]", s.Scored(), lo, hi)
		}
	}
	if lo, hi := s.Interval(); lo != sd/(n*100) || hi != lo {
		t.Errorf("at the end: [%v, %v], want exactly %v", lo, hi, sd/(n*100))
	}
	for _, c := range []Config{
		{N: 10, W: 10, Level: 0.95, Pilot: 5},                       // First is not the pilot
		{N: 10, W: 10, Level: 0.95, Pilot: 5, First: 5, Resid: 1},   // a bound and a pilot
		{N: 10, W: 10, Level: 0.95, Pilot: 5, First: 5, Unit: true}, // items need no pilot
	} {
		if _, err := New(c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}

// The span sequence's factor exp(ηX − η²X²/6 − η²σ²/3) has mean at most 1
// at the true delta for any bet η, however skewed what is left: checked
// exactly (the mean over every record left) on heavy-tailed, one-sided
// and two-point populations, whose residual is X = x − μ and σ² the
// variance of what is left. Without the σ² term (a bet on the observed
// squares alone) a rare large loss is underpriced and the mean exceeds 1.
func TestSpanFactorIsSupermartingale(t *testing.T) {
	t.Parallel()
	g := rand.New(rand.NewPCG(5, 9))
	rare := make([]float64, 100) // a loss of 99 once in 100, a gain of 1 otherwise
	for i := range rare {
		rare[i] = 1
	}
	rare[0] = -99
	pops := [][]float64{rare}
	for range 200 {
		x := make([]float64, 2+g.IntN(50))
		for i := range x {
			x[i] = g.NormFloat64() / math.Max(1e-3, math.Abs(g.NormFloat64())) // Cauchy-like tails
			if g.IntN(3) == 0 {
				x[i] = math.Abs(x[i])
			}
		}
		pops = append(pops, x)
	}
	underpriced := false
	for _, x := range pops {
		var mu, v float64
		for _, y := range x {
			mu += y / float64(len(x))
		}
		for _, y := range x {
			v += (y - mu) * (y - mu) / float64(len(x))
		}
		if v == 0 {
			continue
		}
		for _, eta := range []float64{-10, -1, -0.1, 0.01, 0.1, 0.5, 1, 3, 10} {
			eta /= math.Sqrt(v)
			var m, free float64
			for _, y := range x {
				X := y - mu
				m += math.Exp(eta*X-eta*eta*X*X/6-eta*eta*v/3) / float64(len(x))
				free += math.Exp(eta*X-eta*eta*X*X/6) / float64(len(x))
			}
			if m > 1+1e-12 {
				t.Fatalf("population %v, η %v: mean factor %v, want at most 1", x, eta, m)
			}
			underpriced = underpriced || free > 1.01
		}
	}
	if !underpriced {
		t.Error("the factor without the variance term never exceeded 1: the check cannot tell the two apart")
	}
}

// below gives {θ : q(θ) < l} within [lo, hi] for quadratics of either
// curvature, lines and constants.
func TestBelow(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	for _, c := range []struct {
		q      quad
		l      float64
		lo, hi float64
		want   [][2]float64
	}{
		{quad{0, 0, 1}, 4, -inf, inf, [][2]float64{{-2, 2}}},                // θ² < 4
		{quad{0, 0, -1}, -4, -inf, inf, [][2]float64{{-inf, -2}, {2, inf}}}, // −θ² < −4
		{quad{0, 0, -1}, -4, -1, 3, [][2]float64{{2, 3}}},
		{quad{1, 2, 0}, 5, -inf, inf, [][2]float64{{-inf, 2}}}, // 1 + 2θ < 5
		{quad{1, 0, 0}, 5, -inf, inf, [][2]float64{{-inf, inf}}},
		{quad{9, 0, 0}, 5, 0, 1, nil},
		{quad{0, 0, 1}, -1, -inf, inf, nil},
	} {
		got := below(nil, c.q, c.l, c.lo, c.hi)
		if len(got) != len(c.want) {
			t.Errorf("below(%+v, %v, [%v, %v]) = %v, want %v", c.q, c.l, c.lo, c.hi, got, c.want)
			continue
		}
		for i := range got {
			for j := range 2 {
				if a, b := got[i][j], c.want[i][j]; a != b && math.Abs(a-b) > 1e-12 {
					t.Errorf("below(%+v, %v, [%v, %v]) = %v, want %v", c.q, c.l, c.lo, c.hi, got, c.want)
				}
			}
		}
	}
}

// A span sequence on tiny sets, on identical scores and at extreme scales
// never gives NaN or an inverted interval, and ends at the exact value.
func TestSpanSequenceExtremes(t *testing.T) {
	t.Parallel()
	g := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 31, 45, 300} {
		for _, scale := range []float64{0, 1e-9, 1, 1e9} {
			w := make([]float64, n)
			d := make([]float64, n)
			var W, sd float64
			for i := range n {
				w[i] = float64(1 + g.IntN(5000))
				d[i] = scale * w[i] * (0.1 + g.NormFloat64()/math.Max(0.05, math.Abs(g.NormFloat64())))
				W, sd = W+w[i], sd+d[i]
			}
			s, err := New(Config{N: n, W: W, Level: 0.95, MinEffect: 0.01, First: min(n, DefaultPilot), Pilot: min(n, DefaultPilot)})
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if err := s.Add(d[i], w[i]); err != nil {
					t.Fatal(err)
				}
				if lo, hi := s.Interval(); math.IsNaN(lo) || math.IsNaN(hi) || lo > hi {
					t.Fatalf("n %d, scale %g, record %d: interval [%v, %v]", n, scale, i+1, lo, hi)
				}
			}
			if lo, hi := s.Interval(); lo != sd/W || hi != lo {
				t.Errorf("n %d, scale %g: at the end [%v, %v], want exactly %v", n, scale, lo, hi, sd/W)
			}
		}
	}
}
