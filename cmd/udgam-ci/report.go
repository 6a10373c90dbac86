package main

import (
	"errors"

	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// reportOptions are the inputs of `udgam-ci report`.
type reportOptions struct {
	Runs     []string
	Markdown bool
}

func runReport(e *env, args []string) error {
	o, err := parseReport(e, args)
	if err != nil {
		return err
	}
	return reportRuns(e, o)
}

func parseReport(e *env, args []string) (reportOptions, error) {
	fs := newFlags(e, "report RUN.jsonl...",
		"print one or more runs' summaries side by side, a table per test, flagging settings that differ from the first run's",
		"udgam-ci report smollm2-135m.jsonl smollm2-360m.jsonl --markdown")
	var o reportOptions
	fs.BoolVar(&o.Markdown, "markdown", false, "print Markdown tables")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return o, err
	}
	if len(pos) == 0 {
		return o, usageError{errors.New("want at least one run file")}
	}
	o.Runs = pos
	return o, nil
}

func reportRuns(e *env, o reportOptions) error {
	runs := make([]*runfile.Run, len(o.Runs))
	for i, path := range o.Runs {
		r, err := runfile.ReadFile(path)
		if err != nil {
			return err
		}
		runs[i] = r
	}
	if o.Markdown {
		return report.RenderRunsMarkdown(e.Stdout, runs)
	}
	return report.RenderRunsText(e.Stdout, runs)
}
