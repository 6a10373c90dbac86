//go:build cgo

package main

import (
	"encoding/json"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
)

// TestConvertedGPTFamilyScore runs checkConvertedScores on GPT-2, GPT-NeoX,
// OLMo and OLMo 2 checkpoints, each checked against its float64 reference.
func TestConvertedGPTFamilyScore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := fresh.GenerateDocs(5, 3, 100, 400)
	data := writeDocs(t, dir, docs)
	items := generateItems(t, dir, 1)
	for _, tt := range []struct {
		name string
		c    converttest.Checkpoint
		ref  func([]byte, map[string][]float32, ...testmodel.RefOption) (*testmodel.Reference, error)
	}{
		// n_positions is the scoring window.
		{"GPT2LMHeadModel", converttest.GPT2{Embd: 32, Heads: 4, Layers: 2, Positions: 512, Dtype: "BF16", Seed: 21}.Checkpoint(), testmodel.NewGPT2},
		{"GPTNeoXForCausalLM", converttest.GPTNeoX{Hidden: 32, Heads: 2, Layers: 2, Intermediate: 64, RotaryPct: 0.25, Parallel: true, Dtype: "BF16", Seed: 22}.Checkpoint(), testmodel.NewGPTNeoX},
		{"OlmoForCausalLM", converttest.Olmo{Version: 1, Hidden: 32, Intermediate: 64, Heads: 4, KVHeads: 2, Layers: 2, ClipQKV: 0.8, Dtype: "BF16", Seed: 23}.Checkpoint(), testmodel.NewOlmo},
		{"Olmo2ForCausalLM", converttest.Olmo{Version: 2, Hidden: 32, Intermediate: 64, Heads: 4, KVHeads: 2, Layers: 2, Dtype: "BF16", Seed: 24}.Checkpoint(), testmodel.NewOlmo2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			config, err := json.Marshal(tt.c.Config)
			if err != nil {
				t.Fatal(err)
			}
			ref := func(w map[string][]float32) (*testmodel.Reference, error) { return tt.ref(config, w) }
			checkConvertedScores(t, tt.c, ref, docs, data, items)
		})
	}
}
