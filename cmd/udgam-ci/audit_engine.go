//go:build cgo

package main

import (
	"fmt"

	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/textprep"
)

// engineQuantize makes out from in with llama.cpp's quantizer.
func engineQuantize(in, out, typ string, threads int) error {
	return llama.Quantize(in, out, typ, threads)
}

// openAuditPair loads both models with the same options (a cache that
// holds a Fresh Text window and the probes' prompts), each wrapped with its
// text preparation for the tests, and pairs the two engines.
func openAuditPair(ref, art string, threads, window int, cpuOnly bool) (audit.Models, func(), error) {
	opts := llama.Options{Threads: threads, Context: max(window, probes.Cells), CPUOnly: cpuOnly}
	var loaded []*llama.Model
	closeAll := func() {
		for _, m := range loaded {
			m.Close()
		}
	}
	// wrap prepares the reference's text as its GGUF says, and the
	// artifact's as the reference's record says when the artifact has none
	// and tokenizes alike (a file llama.cpp's converter made from the same
	// checkpoint), so both runs see the same ids and record the same
	// preparation; audit.Run refuses other tokenizers by name.
	var refInfo *runner.Info
	wrap := func(m runner.Model) (runner.Model, error) {
		if refInfo != nil && refInfo.TokenizerSpec != nil && m.Info().TokenizerSpec == nil && len(runner.TokenizerDiff(*refInfo, m.Info())) == 0 {
			return textprep.WrapModelAs(m, *refInfo)
		}
		return textprep.WrapModel(m)
	}
	load := func(path string) (*llama.Model, runner.Model, error) {
		m, err := llama.Load(path, opts)
		if err != nil {
			return nil, nil, err
		}
		noteGPUFallback(cpuOnly)
		loaded = append(loaded, m)
		w, err := wrap(m)
		if err != nil {
			return nil, nil, fmt.Errorf("model %s: %w", path, err)
		}
		return m, w, nil
	}
	refRaw, refModel, err := load(ref)
	if err != nil {
		closeAll()
		return audit.Models{}, nil, err
	}
	ri := refRaw.Info()
	refInfo = &ri
	artRaw, artModel, err := load(art)
	if err != nil {
		closeAll()
		return audit.Models{}, nil, err
	}
	pair, err := llama.NewPair(refRaw, artRaw)
	if err != nil {
		closeAll()
		return audit.Models{}, nil, err
	}
	return audit.Models{Ref: refModel, Art: artModel, RawArt: artRaw, Pair: pair, Wrap: wrap}, closeAll, nil
}
