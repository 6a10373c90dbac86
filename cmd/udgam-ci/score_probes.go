package main

import (
	"encoding/json"
	"flag"
	"fmt"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/hub"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

type scoreProbesOptions struct {
	Model string
	Items string // "" for the embedded core set
	Batch int
	// Variants is --variants as given; variants the parsed names.
	Variants string
	variants []string
	scoreFlags

	// Open loads the model; tests put a pure-Go reference model here.
	Open func(path string, threads int, cpuOnly bool) (runner.Model, error)
}

func runScoreProbes(e *env, args []string) error {
	o := newScoreProbesOptions()
	fs := newFlags(e, "score probes",
		"score a GGUF model on the Probe Suite: each choice's summed log-probability after the prompt picks the answer; records go to the run file as items complete",
		"udgam-ci score probes --model smollm2-135m.gguf --out probes.jsonl --json")
	if err := parseScore(e, fs, args, &o); err != nil {
		return err
	}
	return scoreProbes(e, o)
}

// newScoreProbesOptions are score probes' defaults, with the engine to
// score with.
func newScoreProbesOptions() scoreProbesOptions {
	return scoreProbesOptions{Batch: probes.DefaultBatch, scoreFlags: newScoreFlags(), Open: openProbesLlama}
}

// register binds o's fields to flags, their values the defaults.
func (o *scoreProbesOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.Model, "model", "", "GGUF model file")
	fs.StringVar(&o.Items, "items", "", "items: JSONL or Parquet file, or hf://OWNER/NAME@COMMIT[/path] (default: the embedded core set, 2,000 items)")
	fs.StringVar(&o.Run.Out, "out", "", "run file to write (JSON Lines)")
	fs.StringVar(&o.Run.BOSMode, "add-bos", o.Run.BOSMode, "BOS before each prompt: auto (when the tokenizer has one), yes or no")
	fs.IntVar(&o.Batch, "batch", o.Batch, "items per engine call (speed only)")
	fs.StringVar(&o.Variants, "variants", "", "also score the prompt variants: all, or some of reworded,terse (the published template is always scored and stays the headline)")
	o.scoreFlags.add(fs, "items", "type and level")
}

// validate refuses what scoreProbes cannot run; pos are stray arguments.
func (o *scoreProbesOptions) validate(e *env, pos []string) error {
	if err := o.check(e, pos, o.Model, o.Run.Out); err != nil {
		return err
	}
	var err error
	if o.variants, err = probes.ParseVariants(o.Variants); err != nil {
		return usageError{err}
	}
	return atLeast("batch", o.Batch, 1)
}

// openProbesLlama loads a model for short prompts and choices, with
// probes.Cells cache cells.
func openProbesLlama(path string, threads int, cpuOnly bool) (runner.Model, error) {
	return openLlama(path, engineOptions{Threads: threads, Context: probes.Cells, CPUOnly: cpuOnly})
}

func scoreProbes(e *env, o scoreProbesOptions) error {
	// Items first: a bad file fails before the model is loaded.
	set, err := loadProbeItems(e, o.Items)
	if err != nil {
		return err
	}
	run, err := o.common(e, runfile.TestProbes, set.Dataset())
	if err != nil {
		return err
	}
	cpuOnly, err := o.cpuOnly()
	if err != nil {
		return err
	}
	m, err := o.Open(o.Model, e.threads(o.Threads), cpuOnly)
	if err != nil {
		return err
	}
	if c, ok := m.(interface{ Close() error }); ok {
		defer c.Close()
	}
	o.noteNoRepo(e)
	if n := evals.BOSNote(run.BOSMode, m.Info()); n != "" {
		fmt.Fprintln(e.Stderr, "note: "+n)
	}
	res, err := probes.Run(e.Ctx, m, probes.RunOptions{RunCommon: run, Data: set, Batch: o.Batch, Variants: o.variants})
	if err != nil {
		return err
	}
	// The margin's interval and the spread across prompt variants are
	// statistics over the finished run (scoring never depends on compare).
	if res.Summary.MarginCI, res.Summary.Variants, err = compare.ProbeStats(res.Tally.Run); err != nil {
		return err
	}
	if o.JSON {
		return json.NewEncoder(e.Stdout).Encode(res.Summary)
	}
	return res.Summary.WriteText(e.Stdout)
}

// loadProbeItems reads the items a run names.
func loadProbeItems(e *env, src string) (*probes.Set, error) {
	return probes.Load(src, fetchFromHub(e, probeDataName))
}

// probeDataName is the Probe Suite's header name for a hub file:
// hf://OWNER/NAME[/path].
func probeDataName(r hub.Ref) string {
	if r.Path == "" {
		return "hf://" + r.Repo
	}
	return "hf://" + r.Repo + "/" + r.Path
}
