package comparetest

import "github.com/udgamlabs/udgam-ci/runfile"

// Variant returns items as scored under prompt variant v: the same items
// under the ids "<id>@<v>", every k-th one's correctness flipped (k 0
// flips none).
func Variant(items []runfile.Item, v string, k int) []runfile.Item {
	out := make([]runfile.Item, len(items))
	for i, it := range items {
		correct := it.Correct
		if k > 0 && i%k == 0 {
			correct = !correct
		}
		out[i] = Item(runfile.VariantID(it.ID, v), it.Type, it.Level, correct, 1)
		out[i].Variant = v
	}
	return out
}
