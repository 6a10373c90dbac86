package main

import (
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strings"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/evals/contamination"
	"github.com/udgamlabs/udgam-ci/internal/ghenv"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// scoreFlags are the flags every scoring command shares (score fresh,
// score probes, audit artifact). Run holds those that are the scorers'
// own options (evals.RunCommon), bound to their flags directly, so a new
// scoring option is a field there, its flag in add, and where evals uses
// it; common fills in the rest (the git metadata, the runtime, the
// contamination report and --until) when the command runs.
type scoreFlags struct {
	Run           evals.RunCommon
	Git           gitFlags
	JSON          bool
	GPU           string
	Threads       int
	Contamination string  // a contamination scan report, recorded in the header
	Exclude       string  // the same, and what it found is left out
	ExcludeAbove  float64 // found means: more than this fraction of n-grams
	// ReuseIfUnchanged is a baseline run whose records the run takes,
	// scoring nothing, when the model is unchanged (--until decided's
	// --baseline is taken without it).
	ReuseIfUnchanged string
	// Rescore scores an unchanged model all the same (a check of the
	// engine's determinism against the baseline).
	Rescore bool
	untilFlags
}

// newScoreFlags are the shared flags' defaults, which add registers the
// flags over.
func newScoreFlags() scoreFlags {
	f := scoreFlags{GPU: "auto", untilFlags: newUntilFlags()}
	f.Run.BOSMode = evals.BOSAuto
	f.Run.Selection.Seed = 1
	return f
}

// scoreOptions are a score command's options: made with their defaults by
// the command's constructor (which the Action starts from too), bound to
// flags by register and checked by validate.
type scoreOptions interface {
	register(fs *flag.FlagSet)
	validate(e *env, pos []string) error
}

// parseScore parses a score command's flags into o and checks them.
func parseScore(e *env, fs *flag.FlagSet, args []string, o scoreOptions) error {
	o.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	return o.validate(e, pos)
}

// gitFlags are --git-repo, --git-sha, --git-ref and --pr; what they leave
// empty comes from the GitHub Actions environment.
type gitFlags struct {
	Repo, SHA, Ref string
	PR             int // 0: none given
}

// git is the run's git metadata: the flags, then the environment.
func (r *scoreFlags) git(e *env) runfile.Git {
	g := ghenv.Commit{Repo: r.Git.Repo, SHA: r.Git.SHA, Ref: r.Git.Ref}
	if r.Git.PR > 0 {
		pr := r.Git.PR
		g.PR = &pr
	}
	return runfile.Git(ghenv.Fill(g, e.Getenv))
}

// add registers the shared flags; unit names what is scored ("documents",
// "items") and group what --sample keeps in proportion.
func (r *scoreFlags) add(fs *flag.FlagSet, unit, group string) {
	sel := &r.Run.Selection
	fs.BoolVar(&r.Run.Resume, "resume", false, "continue --out, skipping the "+unit+" it already holds")
	fs.IntVar(&r.Threads, "threads", 0, "CPU threads, at most the machine's cores (default: all cores)")
	fs.IntVar(&sel.Limit, "limit", 0, "score only the first N selected "+unit+" (0: all)")
	fs.IntVar(&sel.Sample, "sample", 0, "score a seeded subset of N "+unit+", stratified by "+group)
	fs.Int64Var(&sel.Seed, "seed", sel.Seed, "seed of --sample")
	fs.Func("match", "score only the "+unit+" whose id matches this regular expression (RE2), before --sample", func(s string) error {
		re, err := regexp.Compile(s)
		if err != nil {
			return fmt.Errorf("want a regular expression: %w", err)
		}
		sel.Match = re
		return nil
	})
	fs.Func("shard", "score part i of n (i/n), for parallel runners; join with udgam-ci merge", func(s string) (err error) {
		sel.Shard, err = evals.ParseShard(s)
		return err
	})
	fs.BoolVar(&r.JSON, "json", false, "print the summary as one JSON object")
	fs.StringVar(&r.Contamination, "contamination", "", "record in the run header what a contamination scan report (contamination scan --out) found among the "+unit+" (all are scored)")
	fs.StringVar(&r.Exclude, "exclude", "", "the same, and leave out the "+unit+" the scan found in the training data")
	fs.Float64Var(&r.ExcludeAbove, "exclude-above", 0, "with --exclude or --contamination: count as found only "+unit+" with more than this fraction of their n-grams in the training data")
	fs.StringVar(&r.GPU, "gpu", r.GPU, "auto: offload every layer to a GPU backend when one is present (Metal, CUDA); cpu: never")
	fs.StringVar(&r.Run.Header.ModelName, "model-name", "", "model name for the run header (default: the GGUF's name)")
	fs.StringVar(&r.Run.Header.ModelRevision, "model-revision", "", "model revision (commit) for the run header")
	r.untilFlags.add(fs, unit)
	fs.StringVar(&r.ReuseIfUnchanged, "reuse-if-unchanged", "", "a baseline's run file: when the model is unchanged from its model (the same GGUF fingerprint: tensors, tokenizer, every key but names) and every setting is the same, write its records instead of scoring (--until decided does this with --baseline)")
	fs.BoolVar(&r.Rescore, "rescore", false, "score even when the model is unchanged from the baseline's (--until decided otherwise takes its records)")
	fs.StringVar(&r.Git.Repo, "git-repo", "", "OWNER/NAME of the training repository (default: GITHUB_REPOSITORY)")
	fs.StringVar(&r.Git.SHA, "git-sha", "", "commit of the training repository (default: GITHUB_SHA)")
	fs.StringVar(&r.Git.Ref, "git-ref", "", "branch: main or the PR's head ref (default: from GITHUB_*)")
	fs.IntVar(&r.Git.PR, "pr", 0, "pull request number (default: from GITHUB_REF)")
}

// common is the scorers' shared options for a run of test over dataset:
// the flags' own (Run), the contamination report, the sequential part, the
// git metadata and runtime for the header, progress on e's stderr.
func (r *scoreFlags) common(e *env, test string, dataset runfile.Dataset) (evals.RunCommon, error) {
	c := r.Run
	var err error
	if c.Selection.Contamination, err = r.contamination(test, dataset); err != nil {
		return c, err
	}
	if c.Selection.Until, err = r.until(test); err != nil {
		return c, err
	}
	switch {
	case r.ReuseIfUnchanged != "":
		if c.Reuse, err = runfile.ReadFile(r.ReuseIfUnchanged); err != nil {
			return c, fmt.Errorf("--reuse-if-unchanged: %w", err)
		}
	case c.Selection.Until != nil && !r.Rescore:
		c.Reuse = r.base // until read it
	}
	c.Header.Git = r.git(e)
	c.Header.Runtime = r.runtime(e, r.Threads)
	c.Progress, c.Terminal, c.Now = e.Stderr, evals.IsTerminal(e.Stderr), e.Now
	return c, nil
}

// contamination reads --contamination or --exclude for a run of test over
// dataset; nil when neither is given.
func (r *scoreFlags) contamination(test string, dataset runfile.Dataset) (*runfile.Contamination, error) {
	path := r.Contamination
	switch {
	case r.Contamination != "" && r.Exclude != "":
		return nil, usageError{errors.New("--contamination and --exclude: give one (--exclude also records)")}
	case r.Exclude != "":
		path = r.Exclude
	case path == "" && r.ExcludeAbove != 0:
		return nil, usageError{errors.New("--exclude-above needs --exclude or --contamination")}
	case path == "":
		return nil, nil
	}
	if r.ExcludeAbove < 0 || r.ExcludeAbove >= 1 {
		return nil, usageError{fmt.Errorf("--exclude-above %g: want 0 <= f < 1", r.ExcludeAbove)}
	}
	c, err := contamination.Check(path, test, dataset, r.ExcludeAbove)
	if err != nil {
		return nil, err
	}
	c.Excluded = r.Exclude != ""
	return c, nil
}

// cpuOnly parses --gpu.
func (r *scoreFlags) cpuOnly() (bool, error) {
	switch r.GPU {
	case "", "auto":
		return false, nil
	case "cpu":
		return true, nil
	}
	return false, usageError{fmt.Errorf("--gpu %q: want auto or cpu", r.GPU)}
}

// runtime is what the run header records of the machine. runtime.gpu is
// --gpu, followed by the devices the layers go to when a GPU backend gives
// any ("auto: CUDA0: NVIDIA H100 80GB HBM3").
func (r *scoreFlags) runtime(e *env, threads int) runfile.Runtime {
	gpu := r.GPU
	if gpu != "cpu" {
		if devs := engineGPUs(); len(devs) > 0 {
			gpu += ": " + strings.Join(devs, ", ")
		}
	}
	return runfile.Runtime{Threads: threads, GPU: gpu, CPU: e.CPUVariant}
}

// check refuses what both score commands refuse: stray arguments,
// a missing --model or --out, and numbers out of range. More threads than
// cores only slow a run down (ggml's threads spin), so they are clamped
// with a notice.
func (r *scoreFlags) check(e *env, pos []string, model, out string) error {
	switch {
	case len(pos) > 0:
		return usageError{fmt.Errorf("unexpected argument %q", pos[0])}
	case model == "":
		return usageError{errors.New("--model is required")}
	case out == "":
		return usageError{errors.New("--out is required")}
	}
	if err := atLeast("threads", r.Threads, 0); err != nil {
		return err
	}
	if err := atLeast("limit", r.Run.Selection.Limit, 0); err != nil {
		return err
	}
	if err := atLeast("sample", r.Run.Selection.Sample, 0); err != nil {
		return err
	}
	if cores := e.CPUs; r.Threads > cores {
		fmt.Fprintf(e.Stderr, "--threads %d: this machine has %d cores; using %d\n", r.Threads, cores, cores)
		r.Threads = cores
	}
	return nil
}

// noteNoRepo tells a run that names no repository, as its scoring starts
// (not after an hour of it, and not before an error in its flags, data or
// model), that push will refuse it.
func (r *scoreFlags) noteNoRepo(e *env) {
	if r.git(e).Repo == "" {
		fmt.Fprintln(e.Stderr, "note: no --git-repo (and no GITHUB_REPOSITORY): the run file will be complete, but `udgam-ci push` needs the repository; add --git-repo OWNER/NAME to push it later")
	}
}

// atLeast refuses a numeric flag below min, naming the flag.
func atLeast(name string, v, min int) error {
	if v < min {
		return usageError{fmt.Errorf("--%s %d: want %d or more", name, v, min)}
	}
	return nil
}
