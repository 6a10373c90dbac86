package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/udgamlabs/udgam-ci/action"
	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/contamination"
	"github.com/udgamlabs/udgam-ci/fetch"
	"github.com/udgamlabs/udgam-ci/hub"
	"github.com/udgamlabs/udgam-ci/runfile"
)

func runAction(e *env, args []string) error {
	fs := newFlags(e, "action",
		"the GitHub Action's entrypoint: reads INPUT_* (action.yml's inputs) and GITHUB_*, fetches and scores the model, compares it with the baseline, keeps one PR comment per model up to date, uploads to the report server, writes outputs and the job summary, and exits non-zero as fail-on says",
		"INPUT_MODEL=HuggingFaceTB/SmolLM2-135M INPUT_REVISION=<commit-sha> INPUT_BASELINE=none udgam-ci action")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: the action reads its inputs from INPUT_* variables", pos[0])}
	}
	res, err := action.Run(e.Ctx, action.Deps{
		Getenv: e.Getenv,
		Out:    e.Stdout,
		Hub: func(cacheDir string) fetch.Hub {
			c := hub.New(e.Getenv)
			c.CacheDir = cacheDir
			c.Progress = e.Stderr
			return c
		},
		Scorer: cliScorer{e: e},
		Scan:   cliScan(e),
		Audit:  cliAudit(e),
		Server: func(url, token string) action.Server { return action.NewServer(url, token, nil) },
	})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return exitCode(res.ExitCode)
	}
	return nil
}

// cliScorer runs the score fresh|probes commands in this process, through
// their options from the commands' constructors, so the action scores
// exactly as the documented commands do and a renamed option fails to
// compile.
type cliScorer struct{ e *env }

func (s cliScorer) Score(ctx context.Context, req action.ScoreRequest) (*runfile.Run, error) {
	se := *s.e
	se.Ctx = ctx
	var run func() error
	var flags *scoreFlags
	switch req.Test {
	case runfile.TestFresh:
		o := newScoreFreshOptions(&se)
		o.Model, o.Data, o.Window, o.Stride = req.Model, req.Data, req.Window, req.Stride
		flags = &o.scoreFlags
		run = func() error {
			if err := o.validate(&se, nil); err != nil {
				return err
			}
			return scoreFresh(&se, o)
		}
	case runfile.TestProbes:
		o := newScoreProbesOptions()
		o.Model, o.Items, o.Variants = req.Model, req.Data, req.Variants
		flags = &o.scoreFlags
		run = func() error {
			if err := o.validate(&se, nil); err != nil {
				return err
			}
			return scoreProbes(&se, o)
		}
	default:
		return nil, fmt.Errorf("no scorer for test %q", req.Test)
	}
	flags.set(req.Out, req.Settings, req.ModelName, req.ModelRevision, req.Git)
	flags.Contamination = req.Contamination
	if q := req.Sequential; q != nil {
		// The Action's minimum effect is the threshold itself, 0 for none,
		// as the flag's is.
		flags.Until, flags.Budget, flags.base = "decided", q.Budget, q.Baseline
		flags.MinEffect = compare.MinEffect{BPB: q.MinEffect, Accuracy: q.MinEffect}
	}
	// A run file left by an earlier job would be refused, not resumed.
	if err := os.Remove(req.Out); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := run(); err != nil {
		return nil, err
	}
	return runfile.ReadFile(req.Out)
}

// set gives the scoring flags what the Action asks of every run that
// scores (a test's run, the artifact audit's), over the flags' defaults.
func (f *scoreFlags) set(out string, s action.Settings, name, revision string, git runfile.Git) {
	f.Run.Out, f.Run.BOSMode, f.Threads = out, s.AddBOS, s.Threads
	f.Run.Header.ModelName, f.Run.Header.ModelRevision = name, revision
	f.Git = gitFlags{Repo: git.Repo, SHA: git.SHA, Ref: git.Ref}
	if git.PR != nil {
		f.Git.PR = *git.PR
	}
	// The Action's gpu input picks the build (metal, cuda); the scorers only
	// need to know whether to stay on the CPU.
	if s.GPU == "cpu" {
		f.GPU = "cpu"
	}
}

// cliScan runs `udgam-ci contamination scan` in this process, as the
// training-data input asks.
func cliScan(e *env) func(ctx context.Context, req action.ScanRequest) (*contamination.Report, error) {
	return func(ctx context.Context, req action.ScanRequest) (*contamination.Report, error) {
		se := *e
		se.Ctx = ctx
		err := contaminationScan(&se, contaminationScanOptions{
			Train: req.Train, Tests: strings.Join(req.Tests, ","), Data: req.FreshData, Items: req.ProbeItems,
			N: contamination.DefaultN, Out: req.Out, TextField: "text", Force: true, Fetch: fetchFromHub(&se, freshDataName),
		})
		if err != nil {
			return nil, err
		}
		return contamination.ReadReport(req.Out)
	}
}
