package probes

// ConstantBest returns, per type, the accuracy in percent of the best
// answer that never looks at the question: always the same choice text
// (such as always "Yes") or always the same position, whichever scores
// more. It is the floor a model has to beat before its score on a type
// says anything; chance alone can hide it (syllogism levels are all "Yes"
// or all "No").
func ConstantBest(items []Item) map[string]float64 {
	type tally struct {
		n      int
		text   map[string]int
		answer map[int]int
	}
	by := map[string]*tally{}
	for i := range items {
		it := &items[i]
		t := by[it.Type]
		if t == nil {
			t = &tally{text: map[string]int{}, answer: map[int]int{}}
			by[it.Type] = t
		}
		t.n++
		t.text[it.Answer]++
		t.answer[it.AnswerIndex()]++
	}
	out := make(map[string]float64, len(by))
	for typ, t := range by {
		best := 0
		for _, c := range t.text {
			best = max(best, c)
		}
		for _, c := range t.answer {
			best = max(best, c)
		}
		out[typ] = 100 * float64(best) / float64(t.n)
	}
	return out
}
