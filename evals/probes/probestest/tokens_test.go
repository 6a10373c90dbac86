package probestest

import (
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
)

// The benchmark hook: on the 2,000 core items, sharing the prompt
// evaluates far fewer tokens than scoring each choice on its own. With the
// byte-level tokenizer the figure is exact arithmetic on the prompts.
func TestCountTokensCore(t *testing.T) {
	t.Parallel()
	set, err := probes.Core()
	if err != nil {
		t.Fatal(err)
	}
	// The engine's packing for probes: 1,024 cells, 256 packed, 32 sequences.
	lim := runner.Limits{BatchTokens: 512, MaxSeqs: 32, Cells: 1024, PackCells: 256, ShareStarts: true}
	c, err := CountTokens(testmodel.RandomBigram(1), set.Items, true, testmodel.BOS, lim)
	if err != nil {
		t.Fatal(err)
	}
	shared, naive := 0, 0
	for _, it := range set.Items {
		p := 1 + len(it.Prompt)
		shared += p
		for _, ch := range it.Choices {
			shared += 1 + len(ch)
			naive += p + 1 + len(ch)
		}
	}
	if c.Items != 2000 || c.Shared != shared || c.Naive != naive {
		t.Fatalf("counts %+v, want shared %d naive %d", c, shared, naive)
	}
	if c.Ratio() < 2.5 {
		t.Errorf("shared prefix evaluates only %.2fx fewer tokens", c.Ratio())
	}
	// Shared starts save what the items packed together begin with alike,
	// and no more than what all 2,000 do.
	all := map[string]bool{}
	for _, it := range set.Items {
		for _, ch := range it.Choices {
			s := "\x00" + it.Prompt + " " + ch // BOS, then the bytes
			for i := 1; i <= len(s); i++ {
				all[s[:i]] = true
			}
		}
	}
	if c.Planned >= c.Shared || c.Planned < len(all) {
		t.Errorf("planned %d tokens: want fewer than shared %d and at least the %d distinct starts of the set", c.Planned, c.Shared, len(all))
	}
	lim.ShareStarts = false
	if plain, err := CountTokens(testmodel.RandomBigram(1), set.Items, true, testmodel.BOS, lim); err != nil || plain.Planned != c.Shared {
		t.Errorf("without ShareStarts the planner feeds %d tokens (%v), want the shared count %d", plain.Planned, err, c.Shared)
	}
	t.Logf("byte tokens on the core set: shared %d, naive %d, %.2fx fewer; planned with shared starts %d, %.2fx fewer than shared", c.Shared, c.Naive, c.Ratio(), c.Planned, float64(c.Shared)/float64(c.Planned))
}
