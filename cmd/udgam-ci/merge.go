package main

import (
	"errors"
	"fmt"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/runfile"
)

type mergeOptions struct {
	Out   string
	Runs  []string
	Force bool
}

func runMerge(e *env, args []string) error {
	var o mergeOptions
	fs := newFlags(e, "merge",
		"join the shard run files of one run (--shard i/n) into a whole run; refuses shards whose headers differ, that overlap, or a missing shard",
		"udgam-ci merge fresh.jsonl fresh-1.jsonl fresh-2.jsonl fresh-3.jsonl")
	fs.BoolVar(&o.Force, "force", false, "overwrite OUT if it exists")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usageError{errors.New("want OUT.jsonl and at least one shard run file")}
	}
	o.Out, o.Runs = pos[0], pos[1:]
	return mergeRuns(e, o)
}

func mergeRuns(e *env, o mergeOptions) error {
	if err := refuseOverwrite(o.Out, o.Force); err != nil {
		return err
	}
	runs := make([]*runfile.Run, len(o.Runs))
	for i, p := range o.Runs {
		if p == o.Out {
			return fmt.Errorf("%s is both the output and a shard", p)
		}
		r, err := runfile.ReadFile(p)
		if err != nil {
			return err
		}
		runs[i] = r
	}
	merged, err := evals.Merge(runs)
	if err != nil {
		// Merge names runs by id; say which file holds which.
		for i, r := range runs {
			err = fmt.Errorf("%w\n  %s: run %s", err, o.Runs[i], r.Header.ID)
		}
		return err
	}
	if err := runfile.WriteFile(o.Out, merged); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "merged %d shards, %d records into %s (run %s)\n", len(runs), merged.Len(), o.Out, merged.Header.ID)
	return nil
}
