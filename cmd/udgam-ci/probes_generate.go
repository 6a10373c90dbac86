package main

import (
	"fmt"

	"github.com/udgamlabs/udgam-ci/evals/probes"
)

type probesGenerateOptions struct {
	Out   string
	Types string
	Per   int
	Seed  int64
	Force bool
}

func runProbesGenerate(e *env, args []string) error {
	o := probesGenerateOptions{}
	fs := newFlags(e, "probes generate",
		"generate Probe Suite items as JSON Lines: the same seed gives the same bytes on every machine (the embedded default is --types core --per 100 --seed 2026, 2,000 items)",
		"udgam-ci probes generate items.jsonl --types core --per 100 --seed 2026")
	fs.StringVar(&o.Types, "types", probes.TypesCore, "core (scored), frontier (weekday, ordering) or all")
	fs.IntVar(&o.Per, "per", probes.DefaultPer, "at most this many items per type and level")
	fs.Int64Var(&o.Seed, "seed", probes.DefaultSeed, "generator seed")
	fs.BoolVar(&o.Force, "force", false, "overwrite OUT if it exists")
	var err error
	if o.Out, err = parseOne(fs, args, "output file, OUT.jsonl"); err != nil {
		return err
	}
	return probesGenerate(e, o)
}

func probesGenerate(e *env, o probesGenerateOptions) error {
	if err := atLeast("per", o.Per, 1); err != nil {
		return err
	}
	if err := refuseOverwrite(o.Out, o.Force); err != nil {
		return err
	}
	items, err := probes.Generate(probes.Options{Types: o.Types, Per: o.Per, Seed: o.Seed})
	if err != nil {
		return err
	}
	if err := probes.WriteFile(o.Out, items); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "wrote %d items to %s (types %s, per %d, seed %d)\n", len(items), o.Out, o.Types, o.Per, o.Seed)
	return nil
}
