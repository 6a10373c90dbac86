package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/udgamlabs/udgam-ci/action"
	"github.com/udgamlabs/udgam-ci/evals/contamination"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner/fetch"
	"github.com/udgamlabs/udgam-ci/runner/hub"
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

// cliScorer runs `udgam-ci score fresh|probes` in this process, so the
// action scores exactly as the documented commands do.
type cliScorer struct{ e *env }

func (s cliScorer) Score(ctx context.Context, req action.ScoreRequest) (*runfile.Run, error) {
	cmd, ok := commands()["score "+req.Test]
	if !ok {
		return nil, fmt.Errorf("no scorer for test %q", req.Test)
	}
	// A run file left by an earlier job would be refused, not resumed.
	if err := os.Remove(req.Out); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	args := []string{"--model", req.Model, "--out", req.Out, "--add-bos", req.AddBOS,
		"--threads", strconv.Itoa(req.Threads), "--model-name", req.ModelName,
		"--git-repo", req.Git.Repo, "--git-sha", req.Git.SHA, "--git-ref", req.Git.Ref}
	// The Action's gpu input picks the build (metal, cuda); the scorers only
	// need to know whether to stay on the CPU.
	if req.GPU == "cpu" {
		args = append(args, "--gpu", "cpu")
	}
	if req.ModelRevision != "" {
		args = append(args, "--model-revision", req.ModelRevision)
	}
	if req.Git.PR != nil {
		args = append(args, "--pr", strconv.Itoa(*req.Git.PR))
	}
	if req.Contamination != "" {
		args = append(args, "--contamination", req.Contamination)
	}
	switch req.Test {
	case runfile.TestFresh:
		args = append(args, "--window", strconv.Itoa(req.Window), "--stride", strconv.Itoa(req.Stride))
		if req.Data != "" {
			args = append(args, "--data", req.Data)
		}
	case runfile.TestProbes:
		if req.Data != "" {
			args = append(args, "--items", req.Data)
		}
	}
	se := *s.e
	se.Ctx = ctx
	if err := cmd.run(&se, args); err != nil {
		return nil, err
	}
	return runfile.ReadFile(req.Out)
}

// cliScan runs `udgam-ci contamination scan` in this process, as the
// training-data input asks.
func cliScan(e *env) func(ctx context.Context, req action.ScanRequest) (*contamination.Report, error) {
	return func(ctx context.Context, req action.ScanRequest) (*contamination.Report, error) {
		se := *e
		se.Ctx = ctx
		err := contaminationScan(&se, contaminationScanOptions{
			Train: req.Train, Tests: strings.Join(req.Tests, ","), Data: req.FreshData, Items: req.ProbeItems,
			N: contamination.DefaultN, Out: req.Out, TextField: "text", Force: true, Fetch: fetchFromHub(&se),
		})
		if err != nil {
			return nil, err
		}
		return contamination.ReadReport(req.Out)
	}
}
