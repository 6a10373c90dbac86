package comparetest

import (
	"fmt"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// MarginItem makes a four-choice item with per-byte scores whose answer
// (choice 0) is m nats per byte ahead of the best wrong choice; every
// choice is 3 bytes, so the summed log-probabilities rank the choices as
// the per-byte ones do.
func MarginItem(id, typ string, level int, m float64) runfile.Item {
	norm := []float64{-3 + m, -3, -3.5, -4}
	it := runfile.Item{ID: id, Type: typ, Level: level, Norm: norm, Logprobs: make([]float64, len(norm))}
	for j, v := range norm {
		it.Logprobs[j] = 3 * v
	}
	it.Pred, it.Tie = runfile.Pick(it.Logprobs)
	it.Correct = it.Pred == it.Answer
	return it
}

// Disagreeing makes n items on which accuracy and the margin disagree:
// base answers half right by a wide margin and half wrong by a hair, head
// answers all right by a hair, so accuracy rises and the margin falls.
func Disagreeing(n int) (base, head []runfile.Item) {
	for i := range n {
		typ := probeTypes[i%len(probeTypes)]
		id := fmt.Sprintf("pea-%s-1-%d", typ, i)
		m := 2.0
		if i%2 == 1 {
			m = -0.01
		}
		base = append(base, MarginItem(id, typ, 1, m))
		head = append(head, MarginItem(id, typ, 1, 0.05))
	}
	return base, head
}
