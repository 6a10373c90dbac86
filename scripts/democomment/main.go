// Command democomment writes the pull-request comment the GitHub Action
// would post for pairs of run files: each pair compared by compare.Runs
// with the Action's default inputs (4,000 resamples, min-effect-bpb 0.002,
// min-effect-accuracy 1, settings differences compared and flagged), all
// rendered by report.RenderComment into one comment, as `udgam-ci action`
// does when it has no report server links to add.
//
//	go run ./scripts/democomment -model demo-bigram -out comment.md \
//	    base-fresh.jsonl head-fresh.jsonl base-probes.jsonl head-probes.jsonl
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/udgamlabs/udgam-ci/action/failon"
	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/internal/atomicfile"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
)

func main() {
	model := flag.String("model", "", "model name the Action would be given (names the comment's hidden marker)")
	out := flag.String("out", "", "Markdown file to write")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: democomment -model NAME -out COMMENT.md BASE HEAD [BASE HEAD]...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *model == "" || *out == "" || flag.NArg() == 0 || flag.NArg()%2 != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*model, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "democomment:", err)
		os.Exit(1)
	}
}

// actionOptions are report options as `udgam-ci action` sets them from its
// inputs' defaults in action.yml.
var actionOptions = func() compare.Options {
	o := compare.NewOptions()
	o.AllowSettingsMismatch = true
	return o
}()

func run(model, out string, files []string) error {
	c := report.Comment{Model: model}
	for i := 0; i < len(files); i += 2 {
		base, err := runfile.ReadFile(files[i])
		if err != nil {
			return err
		}
		head, err := runfile.ReadFile(files[i+1])
		if err != nil {
			return err
		}
		cmp, err := compare.Runs(base, head, actionOptions)
		if err != nil {
			return fmt.Errorf("compare %s with %s: %w", files[i], files[i+1], err)
		}
		c.Tests = append(c.Tests, cmp)
	}
	_, c.Verdict = failon.Comparisons(failon.Default, model, c.Tests) // the Action's default fail-on
	var body bytes.Buffer
	if err := report.RenderComment(&body, c); err != nil {
		return err
	}
	if !bytes.Contains(body.Bytes(), []byte(report.Marker(model))) {
		return errors.New("rendered comment lacks its hidden marker")
	}
	return atomicfile.Write(out, func(w io.Writer) error {
		_, err := w.Write(body.Bytes())
		return err
	})
}
