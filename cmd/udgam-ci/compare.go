package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/udgamlabs/udgam-ci/action/failon"
	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// compareOptions are the inputs of `udgam-ci compare`.
type compareOptions struct {
	Base, Head string
	JSON       bool
	Markdown   bool
	FailOn     string // the Action's fail-on: when the command exits 1
	Stats      compare.Options
}

func runCompare(e *env, args []string) error {
	o, err := parseCompare(e, args)
	if err != nil {
		return err
	}
	return compareRuns(e, o)
}

func parseCompare(e *env, args []string) (compareOptions, error) {
	fs := newFlags(e, "compare BASE.jsonl HEAD.jsonl",
		"compare two runs of the same test by paired bootstrap over their shared documents or items: head - base, its interval, a verdict",
		"udgam-ci compare main-fresh.jsonl pr-fresh.jsonl --markdown")
	o := compareOptions{Stats: compare.NewOptions()}
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object (metric, base, head, delta, ci, n, significant, verdict, settings_diff, by_group, ...)")
	fs.BoolVar(&o.Markdown, "markdown", false, "print Markdown, as in the PR comment")
	fs.IntVar(&o.Stats.Resamples, "resamples", o.Stats.Resamples, "bootstrap resamples")
	fs.Uint64Var(&o.Stats.Seed, "seed", o.Stats.Seed, "seed of the resampling generator (same seed, same interval)")
	fs.Float64Var(&o.Stats.Confidence, "confidence", o.Stats.Confidence, "level of the interval")
	minEffectFlag(fs, &o.Stats.MinEffect, "smallest delta that counts as a change")
	fs.IntVar(&o.Stats.MinShared, "min-shared", o.Stats.MinShared, "fewest shared documents or items to compare")
	fs.BoolVar(&o.Stats.AllowSettingsMismatch, "allow-settings-mismatch", false, "compare even when settings that change results differ (they are printed first)")
	fs.BoolVar(&o.Stats.ByLevel, "by-level", false, "probes: also compare each type and level")
	fs.StringVar(&o.FailOn, "fail-on", failon.Default, "exit 1 when the verdict is: regression (a regression), settings-mismatch (also settings that differ, with --allow-settings-mismatch) or never, as the Action's fail-on")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return o, err
	}
	switch {
	case len(pos) != 2:
		return o, usageError{fmt.Errorf("want two run files, BASE.jsonl and HEAD.jsonl; got %s", arguments(len(pos)))}
	case o.JSON && o.Markdown:
		return o, usageError{errors.New("--json and --markdown exclude each other")}
	case o.Stats.Resamples < 1:
		return o, usageError{fmt.Errorf("--resamples %d: want at least 1", o.Stats.Resamples)}
	case !slices.Contains([]string{failon.Regression, failon.Mismatch, failon.Never}, o.FailOn):
		return o, usageError{fmt.Errorf("--fail-on %q: want %s, %s or %s (contamination needs a scan: the Action's training-data)",
			o.FailOn, failon.Regression, failon.Mismatch, failon.Never)}
	}
	o.Base, o.Head = pos[0], pos[1]
	return o, nil
}

func compareRuns(e *env, o compareOptions) error {
	base, err := runfile.ReadFile(o.Base)
	if err != nil {
		return err
	}
	head, err := runfile.ReadFile(o.Head)
	if err != nil {
		return err
	}
	c, err := compare.Runs(base, head, o.Stats)
	if err != nil {
		return fmt.Errorf("%s vs %s: %w", o.Base, o.Head, err)
	}
	if c.Mismatch {
		for _, d := range c.SettingsDiff {
			if d.Refuses() {
				fmt.Fprintf(e.Stderr, "warning: a setting that changes results differs: %s\n", d)
			}
		}
	}
	if err := printComparison(e, o, c); err != nil {
		return err
	}
	// The exit status is the Action's gate on this one comparison.
	if fails, line := failon.Comparisons(o.FailOn, head.Header.Model.Name, []*compare.Comparison{c}); fails {
		fmt.Fprintln(e.Stderr, line)
		return exitCode(1)
	}
	return nil
}

func printComparison(e *env, o compareOptions, c *compare.Comparison) error {
	switch {
	case o.JSON:
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	case o.Markdown:
		return report.RenderSummary(e.Stdout, report.Comment{Tests: []*compare.Comparison{c}})
	default:
		return report.RenderText(e.Stdout, report.Comment{Tests: []*compare.Comparison{c}})
	}
}
