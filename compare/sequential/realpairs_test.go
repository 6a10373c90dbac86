package sequential

import (
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// realPair is a recorded pair of checkpoints of one real model
// (testdata/realpairs, made by testdata/mkrealpairs): every window's
// scored span of a Fresh Text set of real files, scored through the
// binary by a shipped quantized GGUF (the base) and its requantization
// to Q8_0 (the head).
type realPair struct {
	p      population // spans: head minus base bits, and bytes
	tokens []float64  // each span's tokens
	drawn  bool       // the documents resampled to resampledSpans
}

// realDoc is one document of a recorded pair: its spans' differences,
// bytes and tokens.
type realDoc struct{ d, w, tok []float64 }

// realPairs are the recorded pairs.
var realPairs = []struct{ file, name string }{
	{"smollm2-135m-q8_0-vs-q4_1.csv.gz", "SmolLM2-135M-Instruct, its Q8_0 requantization vs the shipped Q4_1"},
	{"gemma3-270m-q8_0-vs-q4_k_m.csv.gz", "Gemma 3 270M, its Q8_0 requantization vs the shipped Q4_K_M"},
}

// readRealDocs reads a recorded pair's documents, in the file's order.
func readRealDocs(t testing.TB, file string) []realDoc {
	t.Helper()
	path := filepath.Join("testdata", "realpairs", file)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	rows, err := csv.NewReader(z).ReadAll()
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var docs []realDoc
	last := ""
	for n, r := range rows[1:] {
		var v [4]float64
		for j := range v {
			if v[j], err = strconv.ParseFloat(r[2+j], 64); err != nil {
				t.Fatalf("%s line %d: %v", path, n+2, r)
			}
		}
		if r[0] != last || r[1] == "1" {
			docs = append(docs, realDoc{})
			last = r[0]
		}
		x := &docs[len(docs)-1]
		x.d, x.w, x.tok = append(x.d, v[2]-v[3]), append(x.w, v[1]), append(x.tok, v[0])
	}
	return docs
}

// newRealPair is the population of docs' spans, with the half-width
// compare gives two full runs of them (over documents) as docHalf.
func newRealPair(name string, docs []realDoc) realPair {
	var d, w, tok, dd, dw []float64
	for _, x := range docs {
		var sd, sw float64
		for k := range x.d {
			d, w, tok = append(d, x.d[k]), append(w, x.w[k]), append(tok, x.tok[k])
			sd, sw = sd+x.d[k], sw+x.w[k]
		}
		dd, dw = append(dd, sd), append(dw, sw)
	}
	p := newPopulation(name+", in spans", d, w, false)
	p.docHalf = newPopulation(name, dd, dw, false).half
	return realPair{p: p, tokens: tok}
}

// resampledSpans is how many spans a pair's resampled set holds at least.
const resampledSpans = 1000

// readRealPairs is each recorded pair as recorded, and resampled: its
// documents drawn with replacement (seeded) until they hold
// resampledSpans spans, a second set of the pair's own changes, with
// other documents repeated. On the recorded sets (616 documents) the
// rule's first possible stop, after the pilot and the fewest records
// (DefaultPilot + DefaultMinRecords spans), is a sixth of the spans.
func readRealPairs(t testing.TB) []realPair {
	var out []realPair
	for _, rp := range realPairs {
		docs := readRealDocs(t, rp.file)
		out = append(out, newRealPair(fmt.Sprintf("%s, %d documents", rp.name, len(docs)), docs))
		g := rand.New(rand.NewPCG(49, 1))
		var drawn []realDoc
		for n := 0; n < resampledSpans; {
			x := docs[g.IntN(len(docs))]
			drawn = append(drawn, x)
			n += len(x.d)
		}
		r := newRealPair(fmt.Sprintf("%s, %d documents drawn from them", rp.name, len(drawn)), drawn)
		r.drawn = true
		out = append(out, r)
	}
	return out
}

// residualTail is the largest span residual at the set's delta over their
// root mean square: how heavy the spans' tail is.
func residualTail(p population) float64 {
	var m, ss float64
	for i := range p.d {
		r := p.d[i] - p.theta*p.w[i]
		m, ss = max(m, math.Abs(r)), ss+r*r
	}
	return m / math.Sqrt(ss/float64(len(p.d)))
}

// TestRealPairsMissRate: on the real pairs, at their own delta, at a delta
// of 0 and of two half-widths, the interval holds the whole set's delta at
// every look in at least 95% of the orders (up to simulation noise), and
// a decision is wrong in at most 5%.
func TestRealPairsMissRate(t *testing.T) {
	t.Parallel()
	for _, r := range readRealPairs(t) {
		p := r.p
		t.Logf("%s: %d spans, delta %.5f bits per byte, half-width over documents %.5f (over spans %.5f), largest residual %.1f times the RMS",
			p.name, len(p.d), p.theta, p.docHalf, p.half, residualTail(p))
		for _, q := range []population{p, p.shifted(0), p.shifted(2 * p.docHalf)} {
			checkMisses(t, q, spanRule)
		}
	}
}

// TestRealPairsAssumption: at each real pair's own delta the span rule's
// assumption holds in every order: the bound may be raised (the sequence
// restarting with half the error left), but never past the last restart,
// so no order is left to score everything for a broken assumption.
func TestRealPairsAssumption(t *testing.T) {
	t.Parallel()
	for _, r := range readRealPairs(t) {
		p := r.p
		n := missOrders()
		newRule := spanRule.make(p, 0)
		var restarted, most, broken int
		perm := make([]int, len(p.d))
		for o := range n {
			for i := range perm {
				perm[i] = i
			}
			g := rand.New(rand.NewPCG(uint64(o)+1, 11))
			g.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			s := newRule().(seqRule).s
			for _, i := range perm {
				if err := s.Add(p.d[i], p.w[i]); err != nil {
					t.Fatal(err)
				}
			}
			if k := len(s.Raised()); k > 0 {
				restarted++
				most = max(most, k)
			}
			if s.Broken() != nil {
				broken++
			}
		}
		t.Logf("%s: over %d orders the bound was raised in %d (at most %d times in one), broken for good in %d", p.name, n, restarted, most, broken)
		if broken > 0 {
			t.Errorf("%s: the assumption broke for good in %d of %d orders", p.name, broken, n)
		}
	}
}

// TestRealPairsStopping reports the share of the bytes and of the tokens
// scored before the rule stops on the real pairs, moved to deltas of 0 to
// 10 half-widths (of the documents' fixed-sample interval, as compare
// gives two full runs), and checks a wrong verdict at most 5% of the
// time, and the cost the rule reaches (see the bars below).
func TestRealPairsStopping(t *testing.T) {
	t.Parallel()
	var table strings.Builder
	table.WriteString("| pair | delta / half-width | min-effect | median bytes scored | 90th pct | up | down | no change | wrong | assumption broken | median tokens scored |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	effects := []float64{0, 1, 2, 5, 10}
	if !*simFull {
		effects = []float64{2, 5}
	}
	for _, r := range readRealPairs(t) {
		name := strings.TrimSuffix(r.p.name, ", in spans")
		for _, me := range []float64{0, 1} {
			for _, k := range effects {
				p := r.p.shifted(k * r.p.docHalf)
				minEffect := me * p.docHalf
				var row strings.Builder
				med, wrong, n := stopRow(&row, name, k, me, p, minEffect, spanRule, func(o outcome) float64 { return o.weight }, false)
				tok := medianTokens(t, r, p, minEffect)
				table.WriteString(strings.TrimSuffix(row.String(), "\n") + fmt.Sprintf(" %.3f |\n", tok))
				if tooMany(wrong, n) {
					t.Errorf("%s, delta %g x, min-effect %g x: wrong verdict in %d of %d orders", name, k, me, wrong, n)
				}
				// The bars, a quarter of the tokens for five
				// half-widths and half for two, on the resampled sets (1,000
				// spans). With -sim.full both pairs meet them there (SmolLM2
				// 0.19 and 0.46 of the tokens, Gemma 0.17 and 0.35) and as
				// recorded (0.20 and 0.49, 0.20 and 0.40), where SmolLM2's
				// two half-widths sit too near the bar for 300 orders.
				bar := map[float64]float64{5: 0.25, 2: 0.5}[k]
				if me == 0 && bar > 0 && r.drawn && (med > bar || tok > bar) {
					t.Errorf("%s, delta %g x half-width: median share scored %.3f of the bytes, %.3f of the tokens, want at most %g", name, k, med, tok, bar)
				}
			}
		}
	}
	t.Logf("%d seeded orders each; shares of the set scored before stopping, real pairs over spans:\n%s", stopOrders(), table.String())
}

// medianTokens is the median share of the tokens scored before the rule
// stops on p, in the orders stopRow runs: it takes where each order
// stopped from runOrders and counts the tokens of the spans scored to
// there, checking that their bytes are the share runOrders reports (the
// same order, record for record).
func medianTokens(t *testing.T, r realPair, p population, minEffect float64) float64 {
	t.Helper()
	os := runOrders(p, stopOrders(), minEffect, spanRule, false)
	var total, bytes float64
	for i := range r.tokens {
		total += r.tokens[i]
		bytes += p.w[i]
	}
	perm := make([]int, len(p.d))
	shares := make([]float64, len(os))
	for o, out := range os {
		for i := range perm {
			perm[i] = i
		}
		g := rand.New(rand.NewPCG(uint64(o)+1, 7)) // runOrders' order o
		g.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		n := int(math.Round(out.stopped * float64(len(perm))))
		var tok, w float64
		for _, i := range perm[:n] {
			tok, w = tok+r.tokens[i], w+p.w[i]
		}
		if math.Abs(w/bytes-out.weight) > 1e-9 {
			t.Fatalf("order %d: its first %d spans hold %.6f of the bytes, runOrders says %.6f: the harness's order changed", o, n, w/bytes, out.weight)
		}
		shares[o] = tok / total
	}
	sort.Float64s(shares)
	return shares[len(shares)/2]
}
