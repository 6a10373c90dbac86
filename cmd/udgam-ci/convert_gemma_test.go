//go:build cgo

package main

import (
	"testing"

	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
)

// TestConvertedGemma3AndLfm2Score runs checkConvertedScores on Gemma 3
// (documents longer than its window of 64) and on LFM2, whose packed
// documents each keep their own convolution state.
func TestConvertedGemma3AndLfm2Score(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := fresh.GenerateDocs(7, 3, 100, 400)
	data := writeDocs(t, dir, docs)
	items := generateItems(t, dir, 1)
	t.Run("Gemma3ForCausalLM", func(t *testing.T) {
		g := converttest.Gemma3{Model: converttest.TinyGemma3(), Dtype: "BF16", Seed: 31}
		checkConvertedScores(t, g.Checkpoint(), g.Model.Reference, docs, data, items, expected{
			Info: []string{"family            transformer", "layers            5 x sliding window 64, attention"},
		})
	})
	t.Run("Lfm2ForCausalLM", func(t *testing.T) {
		l := converttest.Lfm2{Model: converttest.TinyLfm2(), Dtype: "BF16", Seed: 32}
		checkConvertedScores(t, l.Checkpoint(), l.Model.Reference, docs, data, items, expected{
			Info: []string{"family            hybrid", "layers            shortconv, attention, shortconv, attention"},
		})
	})
}
