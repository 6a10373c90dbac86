package sequential

import "math"

// The span sequence: a bound on the spread of the residuals, not on their
// range (the package comment has the argument).

// addSpan takes the next span: the bet on it, then the interval.
func (s *Sequence) addSpan(d, w float64) {
	if s.t >= s.cfg.First && s.broken == nil {
		s.spanBet(d, w)
	}
	s.t++
	s.sd, s.sw = s.sd+d, s.sw+w
	s.sdd, s.sdw, s.sww = s.sdd+d*d, s.sdw+d*w, s.sww+w*w
	if s.t == s.cfg.Pilot {
		s.setV(0)
	}
	if s.t > s.cfg.First && s.t < s.cfg.N && s.broken == nil {
		s.spanNarrow()
	}
}

// ss is Σ(d − θw)² over the records scored.
func (s *Sequence) ss(th float64) float64 {
	return max(0, s.sdd-(2*s.sdw-th*s.sww)*th)
}

// setV sets the bound V from the records scored so far (the pilot, or all
// of them when the last bound failed): VarScale times N times their mean
// square residual at their own delta, at least floor and a tiny share of
// a mean record's squared bytes (a pilot of identical scores has none).
func (s *Sequence) setV(floor float64) {
	n, t := float64(s.cfg.N), float64(s.t)
	m := s.ss(s.Estimate())
	s.v = max(VarScale*n*m/t, floor, 1e-12*s.cfg.W*s.cfg.W/n)
	s.vs, s.vn = m, t
}

// spanBet adds a span's term to both capitals' log lower bounds:
// ±η(p − θq) − η²(p − θq)²/6 − η²σ̄²(θ)/3, with X = p − θq the residual less
// the mean of what is left and σ̄²(θ) = (V − Σ(d − θw)²)/left − μ(θ)².
func (s *Sequence) spanBet(d, w float64) {
	left := float64(s.cfg.N - s.t) // records left, this one included
	th := s.Estimate()
	mu := (th*s.sw - s.sd) / left
	sig := max(0, (s.v-s.ss(th))/left-mu*mu)
	// η is sized for a decision after tune records at the spread seen so
	// far (the pilot's first) and the spread the bound allows, the two
	// halves of the penalty
	k := max(s.vs/s.vn/6+sig/3, 1e-300)
	eta := math.Sqrt(s.logA / (s.tune * k))
	if math.IsInf(eta*eta*s.v, 0) {
		return // a bet too large to price: skipping it is betting nothing
	}
	p, q := d+s.sd/left, w+s.sw/left
	e := eta * eta / 3
	l2 := left * left
	pen := quad{
		a: e*p*p/2 + e*(s.v-s.sdd)/left - e*s.sd*s.sd/l2,
		b: -e*p*q + 2*e*s.sdw/left + 2*e*s.sw*s.sd/l2,
		c: e*q*q/2 - e*s.sww/left - e*s.sw*s.sw/l2,
	}
	s.up.a += eta*p - pen.a
	s.up.b += -eta*q - pen.b
	s.up.c -= pen.c
	s.down.a += -eta*p - pen.a
	s.down.b += eta*q - pen.b
	s.down.c -= pen.c
	x := d - th*w - mu
	s.vs += x * x
	s.vn++
}

// spanNarrow intersects the interval with the θ the bound allows and
// neither capital rejects, or starts the sequence again when none is left.
func (s *Sequence) spanNarrow() {
	left := float64(s.cfg.N - s.t)
	// Σ(d − θw)² + (Σd − θΣw)²/left ≤ V: what is left must still fit
	fit := quad{s.sdd + s.sd*s.sd/left - s.v, -2*s.sdw - 2*s.sd*s.sw/left, s.sww + s.sw*s.sw/left}
	// a quadratic's survivors are at most two intervals, so each pass
	// fits in a small buffer on the stack
	var bufs [3][6][2]float64
	set := below(bufs[0][:0], fit, 0, s.lo, s.hi)
	if s.t > s.cfg.First {
		for k, g := range []quad{s.up, s.down} {
			next := bufs[k+1][:0]
			for _, iv := range set {
				next = below(next, g, s.logA, iv[0], iv[1])
			}
			set = next
		}
	}
	// the scored spans already spread wider than V allows of the whole
	// set (a tail the pilot missed), or no θ is left: raise V
	if len(set) == 0 || float64(s.cfg.N)*s.ss(s.Estimate())/float64(s.t) > s.v {
		s.broken = []int{s.t}
		if len(s.raised) < maxRaises {
			s.raise()
		}
		return
	}
	s.lo, s.hi = set[0][0], set[len(set)-1][1]
}

// raise starts the span sequence again after the record that broke its
// bound: the records so far enter exactly, as a pilot does, V at least
// doubles, and the new sequence holds half the error the last one did.
func (s *Sequence) raise() {
	s.raised = append(s.raised, s.broken...)
	s.broken = nil
	s.logA += math.Ln2
	s.setV(2 * s.v)
	s.cfg.First = s.t
	s.up, s.down = quad{}, quad{}
	s.lo, s.hi = math.Inf(-1), math.Inf(1)
}

// below appends {θ in [lo, hi] : q(θ) < l} to out as disjoint intervals
// in order (at most two: a quadratic crosses l at most twice).
func below(out [][2]float64, q quad, l, lo, hi float64) [][2]float64 {
	a, b, c := q.a-l, q.b, q.c
	var roots [2]float64
	nr := 0
	switch {
	case c == 0 && b != 0:
		roots[0], nr = -a/b, 1
	case c != 0:
		if disc := b*b - 4*a*c; disc > 0 {
			// the stable pair of roots
			r := -(b + math.Copysign(math.Sqrt(disc), b)) / 2
			x, y := r/c, a/r
			if r == 0 {
				x, y = 0, 0
			}
			roots, nr = [2]float64{min(x, y), max(x, y)}, 2
		}
	}
	var pts [4]float64
	pts[0] = lo
	np := 1
	for _, x := range roots[:nr] {
		if x > lo && x < hi {
			pts[np] = x
			np++
		}
	}
	pts[np] = hi
	np++
	start := len(out)
	for i := 0; i+1 < np; i++ {
		if q.at(mid(pts[i], pts[i+1]))-l < 0 {
			if n := len(out); n > start && out[n-1][1] == pts[i] {
				out[n-1][1] = pts[i+1]
				continue
			}
			out = append(out, [2]float64{pts[i], pts[i+1]})
		}
	}
	return out
}

// mid is a point inside (a, b), either end possibly infinite.
func mid(a, b float64) float64 {
	switch {
	case math.IsInf(a, -1) && math.IsInf(b, 1):
		return 0
	case math.IsInf(a, -1):
		return b - 1 - math.Abs(b)
	case math.IsInf(b, 1):
		return a + 1 + math.Abs(a)
	}
	return a + (b-a)/2
}
