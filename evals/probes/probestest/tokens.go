package probestest

import (
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/runner"
)

// TokenCounts compares the tokens an engine evaluates with a shared prefix
// (each prompt once, then every choice's tokens) against naive scoring
// (every choice as its own full sequence, prompt included), and, in
// Planned, what the planner feeds under given limits (with ShareStarts,
// fewer than Shared: items packed together share their prompts' and
// choices' common starts).
type TokenCounts struct {
	Items   int `json:"items"`
	Shared  int `json:"shared"`
	Naive   int `json:"naive"`
	Planned int `json:"planned"`
}

// Ratio is how many times fewer tokens shared-prefix scoring evaluates.
func (c TokenCounts) Ratio() float64 {
	if c.Shared == 0 {
		return 0
	}
	return float64(c.Naive) / float64(c.Shared)
}

// CountTokens counts every way for items with tok's tokenizer, Planned in
// batches of probes.DefaultBatch items as probes.Score sends them.
func CountTokens(tok runner.Tokenizer, items []probes.Item, addBOS bool, bos int32, lim runner.Limits) (TokenCounts, error) {
	c := TokenCounts{Items: len(items)}
	var batch []runner.Request
	for i := range items {
		r, err := probes.BuildRequest(tok, &items[i], addBOS, bos)
		if err != nil {
			return TokenCounts{}, err
		}
		if batch = append(batch, r); len(batch) == probes.DefaultBatch || i == len(items)-1 {
			c.Planned += runner.PlannedTokens(batch, lim)
			batch = batch[:0]
		}
		choices := 0
		for _, b := range r.Branches {
			choices += len(b.Tokens)
		}
		c.Shared += len(r.Prefix) + choices
		c.Naive += len(r.Branches)*len(r.Prefix) + choices
	}
	return c, nil
}
