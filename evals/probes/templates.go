package probes

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/udgamlabs/udgam-ci/internal/numfmt"
)

// question is one generated question before it becomes an Item: the text
// between "Question: " and "\nAnswer:", the answer and the wrong choices.
type question struct {
	text   string
	answer string
	wrong  []string
}

// level builds the questions of one type and level. Levels with a large
// space of questions draw them at random (sample); levels with a small one
// list them all (all), so "every one of the 64 products" is exact rather
// than a matter of luck.
type level struct {
	sample func(r *rng) question
	all    func(r *rng) []question
}

// suite lists every type's three levels in output order.
var suite = []struct {
	typ      string
	frontier bool
	levels   [3]level
}{
	{"add", false, [3]level{
		{sample: func(r *rng) question { return sum(r, 10, 99) }},
		{sample: func(r *rng) question { return sum(r, 100, 9999) }},
		{sample: func(r *rng) question { return sum(r, 100000, 999999) }},
	}},
	{"mul", false, [3]level{
		{all: digitProducts},
		{sample: func(r *rng) question { return product(r, r.between(12, 99), r.between(3, 9)) }},
		{sample: func(r *rng) question { return product(r, r.between(12, 99), r.between(12, 99)) }},
	}},
	{"units", false, [3]level{
		{sample: func(r *rng) question { return conversion(r, timeUnits, strconv.Itoa(r.between(2, 30))) }},
		{sample: func(r *rng) question { return conversion(r, metricUnits, strconv.Itoa(r.between(2, 99))) }},
		{sample: func(r *rng) question {
			return conversion(r, metricUnits, fmt.Sprintf("%d.%d", r.between(1, 50), r.between(1, 9)))
		}},
	}},
	{"sequence", false, [3]level{
		{sample: arithmeticSequence},
		{all: geometricSequences},
		{sample: quadraticSequence},
	}},
	{"word_problem", false, [3]level{
		{sample: buyOrGive},
		{sample: bags},
		{sample: change},
	}},
	{"compare", false, [3]level{
		{sample: compareSmall},
		{sample: compareSwapped},
		{sample: compareDecimals},
	}},
	{"syllogism", false, [3]level{
		{sample: func(r *rng) question { return chain(r, 2, false) }},
		{sample: func(r *rng) question { return chain(r, 2, true) }},
		{sample: func(r *rng) question { return chain(r, 3, false) }},
	}},
	{"weekday", true, [3]level{
		{sample: func(r *rng) question { return weekday(r, 2, 20) }},
		{sample: func(r *rng) question { return weekday(r, 21, 100) }},
		{sample: func(r *rng) question { return weekday(r, 101, 1000) }},
	}},
	{"ordering", true, [3]level{
		{sample: func(r *rng) question { return ordering(r, 3) }},
		{sample: func(r *rng) question { return ordering(r, 4) }},
		{sample: func(r *rng) question { return ordering(r, 5) }},
	}},
}

// formatInt writes n with thousands commas from 10,000 up, as the suite
// defines ("9999", "10,000").
func formatInt(n int) string {
	if n < 10000 && n > -10000 {
		return strconv.Itoa(n)
	}
	return numfmt.Count(n)
}

// nearMisses returns three wrong answers close to a: off by 1, 2, 9, 10 or
// 100 either way, or double. Only positive values are offered.
func nearMisses(r *rng, a int) []string {
	var cands []int
	seen := map[int]bool{a: true}
	for _, c := range []int{a + 1, a - 1, a + 2, a - 2, a + 9, a - 9, a + 10, a - 10, a + 100, a - 100, 2 * a} {
		if c > 0 && !seen[c] {
			seen[c] = true
			cands = append(cands, c)
		}
	}
	shuffle(r, cands)
	wrong := make([]string, 3)
	for i := range wrong {
		wrong[i] = formatInt(cands[i])
	}
	return wrong
}

func numeric(r *rng, text string, answer int) question {
	return question{text: text, answer: formatInt(answer), wrong: nearMisses(r, answer)}
}

func sum(r *rng, lo, hi int) question {
	a, b := r.between(lo, hi), r.between(lo, hi)
	return numeric(r, fmt.Sprintf("What is %s + %s?", formatInt(a), formatInt(b)), a+b)
}

func product(r *rng, a, b int) question {
	if r.intn(2) == 1 {
		a, b = b, a
	}
	return numeric(r, fmt.Sprintf("What is %s × %s?", formatInt(a), formatInt(b)), a*b)
}

// digitProducts lists the 64 products of two digits from 2 to 9.
func digitProducts(r *rng) []question {
	var qs []question
	for a := 2; a <= 9; a++ {
		for b := 2; b <= 9; b++ {
			qs = append(qs, numeric(r, fmt.Sprintf("What is %d × %d?", a, b), a*b))
		}
	}
	return qs
}

// unit is one conversion: how many small units in one big unit.
type unit struct {
	small, big string // plural names
	factor     int
}

var timeUnits = []unit{
	{"minutes", "hours", 60},
	{"seconds", "minutes", 60},
	{"hours", "days", 24},
	{"days", "weeks", 7},
	{"months", "years", 12},
}

var metricUnits = []unit{
	{"metres", "kilometres", 1000},
	{"centimetres", "metres", 100},
	{"millimetres", "centimetres", 10},
	{"grams", "kilograms", 1000},
	{"millilitres", "litres", 1000},
}

// conversion asks how many small units are in qty big units. qty has at
// most one decimal place and every factor is a multiple of 10 or qty is
// whole, so the answer is a whole number.
func conversion(r *rng, units []unit, qty string) question {
	u := pick(r, units)
	whole, tenths, _ := strings.Cut(qty, ".")
	w, _ := strconv.Atoi(whole)
	answer := w * u.factor
	if tenths != "" {
		t, _ := strconv.Atoi(tenths)
		answer += t * u.factor / 10
	}
	return numeric(r, fmt.Sprintf("How many %s are in %s %s?", u.small, qty, u.big), answer)
}

// nextTerm shows five terms and asks for the sixth.
func nextTerm(r *rng, terms []int) question {
	shown := make([]string, 5)
	for i := range shown {
		shown[i] = formatInt(terms[i])
	}
	return numeric(r, "What number comes next: "+strings.Join(shown, ", ")+", ?", terms[5])
}

func arithmeticSequence(r *rng) question {
	start, step := r.between(1, 50), r.between(2, 15)
	terms := make([]int, 6)
	for i := range terms {
		terms[i] = start + i*step
	}
	return nextTerm(r, terms)
}

// geometricSequences lists the 36 sequences with a first term from 1 to 9
// and a ratio from 2 to 5.
func geometricSequences(r *rng) []question {
	var qs []question
	for start := 1; start <= 9; start++ {
		for ratio := 2; ratio <= 5; ratio++ {
			terms := make([]int, 6)
			terms[0] = start
			for i := 1; i < 6; i++ {
				terms[i] = terms[i-1] * ratio
			}
			qs = append(qs, nextTerm(r, terms))
		}
	}
	return qs
}

// quadraticSequence grows by a difference that itself grows by a constant:
// 5, 8, 13, 20, 29 (differences 3, 5, 7, 9).
func quadraticSequence(r *rng) question {
	t, d, dd := r.between(1, 30), r.between(1, 10), r.between(1, 4)
	terms := make([]int, 6)
	for i := range terms {
		terms[i] = t
		t += d
		d += dd
	}
	return nextTerm(r, terms)
}

var people = []string{"Chen", "Kai", "Mia", "Ana", "Ravi", "Lena", "Omar", "Sara", "Tom", "Yuki", "Zara", "Ben", "Ivy", "Noah", "Priya", "Leo"}

var things = []string{"apples", "pencils", "marbles", "stickers", "books", "cookies", "stamps", "shells"}

func buyOrGive(r *rng) question {
	name, thing := pick(r, people), pick(r, things)
	if r.intn(2) == 0 {
		a, b := r.between(5, 30), r.between(2, 20)
		return numeric(r, fmt.Sprintf("%s has %d %s and buys %d more. How many %s does %s have now?", name, a, thing, b, thing, name), a+b)
	}
	a := r.between(10, 40)
	b := r.between(2, a-1)
	return numeric(r, fmt.Sprintf("%s has %d %s and gives away %d. How many %s does %s have left?", name, a, thing, b, thing, name), a-b)
}

func bags(r *rng) question {
	name, thing := pick(r, people), pick(r, things)
	n, each := r.between(2, 12), r.between(3, 12)
	return numeric(r, fmt.Sprintf("%s buys %d bags of %s. Each bag holds %d %s. How many %s does %s buy?", name, n, thing, each, thing, thing, name), n*each)
}

var goods = []string{"pens", "notebooks", "erasers", "rulers", "candles", "mugs", "tickets", "plants"}

// change pays for n goods with a round amount above the cost.
func change(r *rng) question {
	name, good := pick(r, people), pick(r, goods)
	price, n := r.between(2, 9), r.between(2, 9)
	cost := price * n
	paid := (cost/5+1)*5 + 5*r.between(0, 3)
	text := fmt.Sprintf("%s cost %d dollars each. %s buys %d %s and pays with %d dollars. How much change does %s get, in dollars?",
		strings.ToUpper(good[:1])+good[1:], price, name, n, good, paid, name)
	return numeric(r, text, paid-cost)
}

// larger asks which of two numbers, written as given, is larger; the two
// numbers are the choices.
func larger(a, b string, aLarger bool) question {
	q := question{text: fmt.Sprintf("Which number is larger, %s or %s?", a, b), answer: a, wrong: []string{b}}
	if !aLarger {
		q.answer, q.wrong = b, []string{a}
	}
	return q
}

func compareSmall(r *rng) question {
	a, b := r.between(10, 99), r.between(10, 99)
	return larger(strconv.Itoa(a), strconv.Itoa(b), a > b)
}

// compareSwapped compares a 4- or 5-digit number with itself with two of its
// digits swapped, so only a careful reading tells them apart.
func compareSwapped(r *rng) question {
	a := r.between(1000, 99999)
	digits := []byte(strconv.Itoa(a))
	i := r.intn(len(digits) - 1)
	j := r.between(i+1, len(digits)-1)
	digits[i], digits[j] = digits[j], digits[i]
	b, _ := strconv.Atoi(string(digits))
	if digits[0] == '0' {
		b = a // no leading zeros: the same number makes the item a tie, dropped below
	}
	return larger(formatInt(a), formatInt(b), a > b)
}

// compareDecimals sets a one-place decimal against a two-place one, where
// the longer one is not always the larger (0.8 against 0.66).
func compareDecimals(r *rng) question {
	whole := r.between(0, 9)
	short := whole*100 + 10*r.between(1, 9)
	long := whole*100 + r.between(11, 99)
	if long%10 == 0 {
		long++ // keep two decimal places
	}
	a, b := fmt.Sprintf("%d.%d", whole, short%100/10), fmt.Sprintf("%d.%02d", whole, long%100)
	if r.intn(2) == 1 {
		return larger(b, a, long > short)
	}
	return larger(a, b, short > long)
}

// kinds are made-up nouns, so the answer follows from the premises alone.
// None ends in "s" or starts with a vowel, so plurals add "s" and the
// article is "a".
var kinds = []string{"blick", "wug", "quam", "zorp", "snerk", "tove", "dax", "fep", "glim", "trop", "vunk", "plim", "krad", "mib", "norp", "yix", "torb", "gleep", "frell", "dwib"}

// chain states n "All A are B." links. Asked forwards (first to last) the
// answer is Yes; converse asks backwards along the chain, where it is No.
func chain(r *rng, links int, converse bool) question {
	ws := append([]string(nil), kinds...)
	shuffle(r, ws)
	ws = ws[:links+1]
	var b strings.Builder
	for i := 0; i < links; i++ {
		fmt.Fprintf(&b, "All %ss are %ss. ", ws[i], ws[i+1])
	}
	from, to, answer := ws[0], ws[links], "Yes"
	if converse {
		lo := r.intn(links)
		hi := r.between(lo+1, links)
		from, to, answer = ws[hi], ws[lo], "No"
	}
	fmt.Fprintf(&b, "Is every %s a %s? Answer Yes or No.", from, to)
	q := question{text: b.String(), answer: answer, wrong: []string{"No"}}
	if answer == "No" {
		q.wrong = []string{"Yes"}
	}
	return q
}

var weekdays = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

// weekday counts days forward; the wrong choices are the day before, the
// day after and two days after.
func weekday(r *rng, lo, hi int) question {
	today, n := r.intn(7), r.between(lo, hi)
	day := (today + n) % 7
	return question{
		text:   fmt.Sprintf("If today is %s, what day will it be in %d days?", weekdays[today], n),
		answer: weekdays[day],
		wrong:  []string{weekdays[(day+6)%7], weekdays[(day+1)%7], weekdays[(day+2)%7]},
	}
}

var comparatives = []struct{ more, most, least string }{
	{"taller", "tallest", "shortest"},
	{"older", "oldest", "youngest"},
	{"faster", "fastest", "slowest"},
}

// ordering states a total order of n people as shuffled pairwise facts and
// asks for one end of it. Choices are four of the names.
func ordering(r *rng, n int) question {
	names := append([]string(nil), people...)
	shuffle(r, names)
	names = names[:n] // names[0] is the most, names[n-1] the least
	c := pick(r, comparatives)
	facts := make([]string, n-1)
	for i := range facts {
		facts[i] = fmt.Sprintf("%s is %s than %s.", names[i], c.more, names[i+1])
	}
	shuffle(r, facts)
	ask, answer := c.most, names[0]
	if r.intn(2) == 1 {
		ask, answer = c.least, names[n-1]
	}
	var wrong []string
	for _, nm := range names {
		if nm != answer {
			wrong = append(wrong, nm)
		}
	}
	shuffle(r, wrong)
	return question{text: strings.Join(facts, " ") + " Who is the " + ask + "?", answer: answer, wrong: wrong[:min(3, len(wrong))]}
}
