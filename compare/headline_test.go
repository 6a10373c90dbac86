package compare

import (
	"encoding/json"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare/comparetest"
)

// TestHeadlineOnlyIsTheFullHeadline: asking for the comparison of all
// records alone gives exactly the full comparison's numbers (the report
// server stores it with each upload, and its compare page shows the full
// one), and nothing else.
func TestHeadlineOnlyIsTheFullHeadline(t *testing.T) {
	t.Parallel()
	for _, p := range bothTests(comparetest.SynthDocs(300, 1, 0.9, 0.2), comparetest.SynthDocs(300, 2, 0.88, 0.2),
		comparetest.SynthItems(300, 1, 0.6), comparetest.SynthItems(300, 2, 0.62)) {
		full, err := Runs(p.base, p.head, Options{Seed: 5, Resamples: 1000, ByLevel: true})
		if err != nil {
			t.Fatal(err)
		}
		head, err := Runs(p.base, p.head, Options{Seed: 5, Resamples: 1000, ByLevel: true, HeadlineOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(full.Result)
		b, _ := json.Marshal(head.Result)
		if string(a) != string(b) {
			t.Errorf("%s: headline only %s, full %s", p.name, b, a)
		}
		if len(head.ByGroup)+len(head.ByLevel)+len(head.Movers.Worse)+len(head.Movers.Better) != 0 || len(full.ByGroup) == 0 {
			t.Errorf("%s: headline only has groups or movers, or the full comparison has none", p.name)
		}
	}
}
