package main

import (
	"fmt"
	"io"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/export"
	"github.com/udgamlabs/udgam-ci/internal/atomicfile"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Export formats.
const (
	formatModelIndex = "model-index"
	formatLMEval     = "lm-eval"
)

// exportOptions are the inputs of `udgam-ci export`.
type exportOptions struct {
	Format    string
	Runs      []string
	Bases     []string // each compared with the run of its test
	Output    string   // "" for stdout
	SourceURL string
	Force     bool
}

func runExport(e *env, args []string) error {
	o, err := parseExport(e, args)
	if err != nil {
		return err
	}
	return exportRuns(e, o)
}

func parseExport(e *env, args []string) (exportOptions, error) {
	fs := newFlags(e, "export RUN.jsonl...",
		"write runs (one per test, of one model), or their comparison with --base runs, as a Hugging Face model card's model-index block or lm-evaluation-harness's results JSON",
		"udgam-ci export --format model-index fresh.jsonl probes.jsonl")
	var o exportOptions
	fs.StringVar(&o.Format, "format", formatModelIndex, "model-index (a model card's YAML front matter) or lm-eval (its results JSON)")
	fs.Func("base", "a base run to compare the run of its test with (repeat for each test)", func(s string) error {
		o.Bases = append(o.Bases, s)
		return nil
	})
	fs.StringVar(&o.Output, "output", "", "write to this file instead of stdout (lm-eval's readers look for results_DATE.json)")
	fs.BoolVar(&o.Force, "force", false, "overwrite --output if it exists")
	fs.StringVar(&o.SourceURL, "source-url", "", "model-index: the URL the results come from (the report server's model page)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return o, err
	}
	if len(pos) == 0 {
		return o, usageError{fmt.Errorf("want one or more run files; got %s", arguments(0))}
	}
	if o.Format != formatModelIndex && o.Format != formatLMEval {
		return o, usageError{fmt.Errorf("--format %q: want %s or %s", o.Format, formatModelIndex, formatLMEval)}
	}
	o.Runs = pos
	return o, nil
}

func exportRuns(e *env, o exportOptions) error {
	if o.Output != "" {
		if err := refuseOverwrite(o.Output, o.Force); err != nil {
			return err
		}
	}
	bases := map[string]*runfile.Run{}
	for _, p := range o.Bases {
		b, err := runfile.ReadFile(p)
		if err != nil {
			return err
		}
		if _, dup := bases[b.Header.Test]; dup {
			return fmt.Errorf("--base %s: a second %s base run", p, b.Header.Test)
		}
		bases[b.Header.Test] = b
	}
	var results []export.Result
	for _, p := range o.Runs {
		r, err := runfile.ReadFile(p)
		if err != nil {
			return err
		}
		var res export.Result
		if b := bases[r.Header.Test]; b != nil {
			res, err = export.Compared(b, r, compare.NewOptions())
			delete(bases, r.Header.Test)
		} else {
			res, err = export.Of(r)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		results = append(results, res)
	}
	for test := range bases {
		return fmt.Errorf("--base: no %s run to compare the %s base run with", test, test)
	}
	write := func(w io.Writer) error {
		if o.Format == formatLMEval {
			return export.LMEval(w, results)
		}
		return export.ModelIndex(w, results, o.SourceURL)
	}
	if o.Output == "" {
		return write(e.Stdout)
	}
	return atomicfile.Write(o.Output, write)
}
