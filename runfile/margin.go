package runfile

// The byte-normalised margin of a probe item, defined once for every
// surface: the per-byte log-probability of the answer minus the best
// per-byte log-probability among the wrong choices, in nats per byte. A
// choice's per-byte log-probability (Item.Norm) is its summed
// log-probability divided by the UTF-8 byte length of the text scored for
// it, " " + choice: the leading space is counted, because it is part of
// the continuation whose probability was summed. Per byte, not per token,
// so that models with different tokenizers are comparable.

// MarginOf is vals[answer] minus the largest of the other values: positive
// when the answer is ahead of every wrong choice.
func MarginOf(vals []float64, answer int) float64 {
	best, first := 0.0, true
	for j, v := range vals {
		if j == answer {
			continue
		}
		if first || v > best {
			best, first = v, false
		}
	}
	return vals[answer] - best
}

// NormMargin is the item's byte-normalised margin; false when the record
// carries no per-byte scores (runs made before they were recorded).
func NormMargin(it *Item) (float64, bool) {
	if len(it.Norm) != len(it.Logprobs) || len(it.Norm) < 2 || it.Answer < 0 || it.Answer >= len(it.Norm) {
		return 0, false
	}
	return MarginOf(it.Norm, it.Answer), true
}

// MeanNormMargin is the mean byte-normalised margin of items; false when
// there are none or any lacks per-byte scores (a mean over part of them
// would be a different number).
func MeanNormMargin(items []Item) (float64, bool) {
	if len(items) == 0 {
		return 0, false
	}
	var sum float64
	for i := range items {
		m, ok := NormMargin(&items[i])
		if !ok {
			return 0, false
		}
		sum += m
	}
	return sum / float64(len(items)), true
}
