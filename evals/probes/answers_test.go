package probes

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// These solvers read each question back from its prompt text and work the
// answer out with their own arithmetic and tables, sharing nothing with the
// generator, so a wrong template or answer is caught.

var (
	reAdd      = regexp.MustCompile(`^What is ([0-9,]+) \+ ([0-9,]+)\?$`)
	reMul      = regexp.MustCompile(`^What is ([0-9,]+) × ([0-9,]+)\?$`)
	reUnits    = regexp.MustCompile(`^How many ([a-z]+) are in ([0-9]+)(?:\.([0-9]))? ([a-z]+)\?$`)
	reSequence = regexp.MustCompile(`^What number comes next: (.+), \?$`)
	reBuy      = regexp.MustCompile(`^([A-Z][a-z]+) has ([0-9]+) ([a-z]+) and buys ([0-9]+) more\. How many ([a-z]+) does ([A-Z][a-z]+) have now\?$`)
	reGive     = regexp.MustCompile(`^([A-Z][a-z]+) has ([0-9]+) ([a-z]+) and gives away ([0-9]+)\. How many ([a-z]+) does ([A-Z][a-z]+) have left\?$`)
	reBags     = regexp.MustCompile(`^([A-Z][a-z]+) buys ([0-9]+) bags of ([a-z]+)\. Each bag holds ([0-9]+) ([a-z]+)\. How many ([a-z]+) does ([A-Z][a-z]+) buy\?$`)
	reChange   = regexp.MustCompile(`^([A-Z][a-z]+) cost ([0-9]+) dollars each\. ([A-Z][a-z]+) buys ([0-9]+) ([a-z]+) and pays with ([0-9]+) dollars\. How much change does ([A-Z][a-z]+) get, in dollars\?$`)
	reCompare  = regexp.MustCompile(`^Which number is larger, ([0-9.,]+) or ([0-9.,]+)\?$`)
	rePremise  = regexp.MustCompile(`All ([a-z]+)s are ([a-z]+)s\. `)
	reAsk      = regexp.MustCompile(`Is every ([a-z]+) a ([a-z]+)\? Answer Yes or No\.$`)
	reWeekday  = regexp.MustCompile(`^If today is ([A-Z][a-z]+), what day will it be in ([0-9]+) days\?$`)
	reFact     = regexp.MustCompile(`([A-Z][a-z]+) is ([a-z]+) than ([A-Z][a-z]+)\.`)
	reWho      = regexp.MustCompile(`Who is the ([a-z]+)\?$`)
)

// num reads an integer, checking the comma rule: commas from 10,000 up and
// only there, in groups of three.
func num(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	if want := commas(n); s != want {
		t.Fatalf("number written %q, want %q", s, want)
	}
	return n
}

func commas(n int) string {
	s := strconv.Itoa(n)
	if n < 10000 {
		return s
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// units per big unit, as a person would know them.
var perUnit = map[string]map[string]int{
	"hours": {"minutes": 60}, "minutes": {"seconds": 60}, "days": {"hours": 24}, "weeks": {"days": 7}, "years": {"months": 12},
	"kilometres": {"metres": 1000}, "metres": {"centimetres": 100}, "centimetres": {"millimetres": 10},
	"kilograms": {"grams": 1000}, "litres": {"millilitres": 1000},
}

func solveSequence(t *testing.T, list string) int {
	var xs []int
	for _, s := range strings.Split(list, ", ") {
		xs = append(xs, num(t, s))
	}
	diff := func(v []int) []int {
		d := make([]int, len(v)-1)
		for i := range d {
			d[i] = v[i+1] - v[i]
		}
		return d
	}
	same := func(v []int) bool {
		for _, x := range v {
			if x != v[0] {
				return false
			}
		}
		return true
	}
	last := xs[len(xs)-1]
	d := diff(xs)
	switch {
	case same(d):
		return last + d[0]
	case xs[0] != 0 && xs[1]%xs[0] == 0 && func() bool {
		r := xs[1] / xs[0]
		for i := 1; i < len(xs); i++ {
			if xs[i] != xs[i-1]*r {
				return false
			}
		}
		return true
	}():
		return last * (xs[1] / xs[0])
	case same(diff(d)):
		dd := diff(d)
		return last + d[len(d)-1] + dd[0]
	}
	t.Fatalf("no rule fits %v", xs)
	return 0
}

// solve returns the right answer read from the question text.
func solve(t *testing.T, it Item) string {
	t.Helper()
	q := strings.TrimSuffix(strings.TrimPrefix(it.Prompt, "Question: "), "\nAnswer:")
	must := func(re *regexp.Regexp, s string) []string {
		m := re.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("%s: %q does not match %s", it.ID, s, re)
		}
		return m
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	switch it.Type {
	case "add":
		m := must(reAdd, q)
		return commas(num(t, m[1]) + num(t, m[2]))
	case "mul":
		m := must(reMul, q)
		return commas(num(t, m[1]) * num(t, m[2]))
	case "units":
		m := must(reUnits, q)
		f, ok := perUnit[m[4]][m[1]]
		if !ok {
			t.Fatalf("%s: no conversion from %s to %s", it.ID, m[4], m[1])
		}
		tenths := 10 * atoi(m[2])
		if m[3] != "" {
			tenths += atoi(m[3])
		}
		if tenths*f%10 != 0 {
			t.Fatalf("%s: answer is not whole", it.ID)
		}
		return commas(tenths * f / 10)
	case "sequence":
		return commas(solveSequence(t, must(reSequence, q)[1]))
	case "word_problem":
		if m := reBuy.FindStringSubmatch(q); m != nil {
			return commas(atoi(m[2]) + atoi(m[4]))
		}
		if m := reGive.FindStringSubmatch(q); m != nil {
			return commas(atoi(m[2]) - atoi(m[4]))
		}
		if m := reBags.FindStringSubmatch(q); m != nil {
			return commas(atoi(m[2]) * atoi(m[4]))
		}
		m := must(reChange, q)
		if strings.ToLower(m[1]) != m[5] {
			t.Fatalf("%s: buys %s but prices %s", it.ID, m[5], m[1])
		}
		change := atoi(m[6]) - atoi(m[2])*atoi(m[4])
		if change <= 0 {
			t.Fatalf("%s: pays too little", it.ID)
		}
		return commas(change)
	case "compare":
		m := must(reCompare, q)
		a, _ := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
		b, _ := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64)
		if a == b {
			t.Fatalf("%s: equal numbers", it.ID)
		}
		if a > b {
			return m[1]
		}
		return m[2]
	case "syllogism":
		is := map[string]string{} // each kind's direct superset
		for _, p := range rePremise.FindAllStringSubmatch(q, -1) {
			is[p[1]] = p[2]
		}
		m := must(reAsk, q)
		for k, seen := m[1], 0; seen <= len(is); k, seen = is[k], seen+1 {
			if k == m[2] {
				return "Yes"
			}
		}
		return "No"
	case "weekday":
		m := must(reWeekday, q)
		days := []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
		for i, d := range days {
			if d == m[1] {
				return days[(i+atoi(m[2]))%7]
			}
		}
		t.Fatalf("%s: no day %q", it.ID, m[1])
	case "ordering":
		above, below := map[string]int{}, map[string]int{}
		names := map[string]bool{}
		for _, f := range reFact.FindAllStringSubmatch(q, -1) {
			above[f[1]]++
			below[f[3]]++
			names[f[1]], names[f[3]] = true, true
		}
		superlative := must(reWho, q)[1]
		most := map[string]bool{"tallest": true, "oldest": true, "fastest": true}[superlative]
		var found []string
		for n := range names {
			if (most && below[n] == 0) || (!most && above[n] == 0) {
				found = append(found, n)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%s: %d people could be the %s", it.ID, len(found), superlative)
		}
		return found[0]
	}
	t.Fatalf("%s: unknown type %q", it.ID, it.Type)
	return ""
}

func TestEveryAnswerRecomputes(t *testing.T) {
	t.Parallel()
	for _, seed := range []int64{2026, 99} {
		for _, it := range generate(t, Options{Types: TypesAll, Per: 100, Seed: seed}) {
			if got := solve(t, it); got != it.Answer {
				t.Errorf("%s (seed %d): %q: answer %q, recomputed %q", it.ID, seed, it.Prompt, it.Answer, got)
			}
			for _, c := range it.Choices {
				if it.Type == "compare" || it.Type == "syllogism" || it.Type == "weekday" || it.Type == "ordering" {
					continue
				}
				num(t, c) // numeric choices follow the comma rule too
			}
		}
	}
}

// Wrong numeric choices are near misses: off by 1, 2, 9, 10 or 100, or double.
func TestDistractors(t *testing.T) {
	t.Parallel()
	for _, it := range generate(t, Options{Types: TypesCore, Per: 100, Seed: 2026}) {
		if len(it.Choices) != 4 {
			continue
		}
		a := num(t, it.Answer)
		for _, c := range it.Choices {
			if c == it.Answer {
				continue
			}
			d := num(t, c) - a
			if d < 0 {
				d = -d
			}
			if d != 1 && d != 2 && d != 9 && d != 10 && d != 100 && num(t, c) != 2*a {
				t.Errorf("%s: wrong choice %s is %s", it.ID, c, fmt.Sprint(d)+" away from "+it.Answer)
			}
		}
	}
}

// Level 2 of syllogism asks against the chain: always No. Levels 1 and 3
// follow it: always Yes.
func TestSyllogismLevels(t *testing.T) {
	t.Parallel()
	for _, it := range generate(t, Options{Types: TypesCore, Per: 100, Seed: 2026}) {
		if it.Type != "syllogism" {
			continue
		}
		if want := map[int]string{1: "Yes", 2: "No", 3: "Yes"}[it.Level]; it.Answer != want {
			t.Errorf("%s: answer %s, want %s", it.ID, it.Answer, want)
		}
	}
}
