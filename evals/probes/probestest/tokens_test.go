package probestest

import (
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/runner/testmodel"
)

// The benchmark hook: on the 2,000 core items, sharing the prompt
// evaluates far fewer tokens than scoring each choice on its own. With the
// byte-level tokenizer the figure is exact arithmetic on the prompts.
func TestCountTokensCore(t *testing.T) {
	set, err := probes.Core()
	if err != nil {
		t.Fatal(err)
	}
	c, err := CountTokens(testmodel.RandomBigram(1), set.Items, true, testmodel.BOS)
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
	t.Logf("byte tokens on the core set: shared %d, naive %d, %.2fx fewer", c.Shared, c.Naive, c.Ratio())
}
