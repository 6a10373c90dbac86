package contamination

import (
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
)

// ProbeItems are the probe items as the scan indexes them: the prompt and
// the answer, as a model trained on a copy would have seen them.
func ProbeItems(set *probes.Set) []Item {
	out := make([]Item, 0, len(set.Items))
	for _, it := range set.Items {
		out = append(out, Item{Test: "probes", ID: it.ID, Group: it.Type, Text: it.Prompt + " " + it.Answer})
	}
	return out
}

// FreshItems are the Fresh Text documents, whole.
func FreshItems(d *fresh.Data) []Item {
	out := make([]Item, 0, len(d.Docs))
	for _, doc := range d.Docs {
		out = append(out, Item{Test: "fresh", ID: doc.ID, Group: doc.Source, Text: doc.Text})
	}
	return out
}
