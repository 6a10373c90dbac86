package main

import (
	"flag"
	"fmt"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/hub"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/textprep"
)

type scoreFreshOptions struct {
	Model       string
	Data        string // "" for the embedded smoke sample
	Window      int
	Stride      int
	BatchTokens int
	scoreFlags

	// Open loads the model; tests put a pure-Go reference model here.
	Open func(path string, threads, window int, cpuOnly bool) (runner.Model, error)
	// Fetch turns an hf:// reference into a local file.
	Fetch func(ref string) (evals.Fetched, error)
}

func runScoreFresh(e *env, args []string) error {
	o := newScoreFreshOptions(e)
	fs := newFlags(e, "score fresh",
		"score a GGUF model on Fresh Text: bits per byte over documents each read on its own through sliding windows; records go to the run file as documents complete",
		"udgam-ci score fresh --model smollm2-135m.gguf --data hf://udgamlabs/fresh-text@COMMIT --out fresh.jsonl --json")
	if err := parseScore(e, fs, args, &o); err != nil {
		return err
	}
	return scoreFresh(e, o)
}

// newScoreFreshOptions are score fresh's defaults, with the engine and
// the hub (through e) to score with.
func newScoreFreshOptions(e *env) scoreFreshOptions {
	return scoreFreshOptions{Window: fresh.DefaultWindow, Stride: fresh.DefaultStride, BatchTokens: fresh.DefaultBatchTokens,
		scoreFlags: newScoreFlags(), Open: openFreshLlama, Fetch: fetchFromHub(e, freshDataName)}
}

// register binds o's fields to flags, their values the defaults.
func (o *scoreFreshOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.Model, "model", "", "GGUF model file")
	fs.StringVar(&o.Data, "data", "", "documents: JSONL or Parquet file, or hf://OWNER/NAME@COMMIT[/path] (default: the embedded smoke sample, not the benchmark)")
	fs.StringVar(&o.Run.Out, "out", "", "run file to write (JSON Lines)")
	fs.StringVar(&o.Run.BOSMode, "add-bos", o.Run.BOSMode, "BOS before each document: auto (when the tokenizer has one), yes or no (then the first token is not scored and its bytes are left out)")
	addWindowFlags(fs, &o.Window, &o.Stride)
	fs.IntVar(&o.BatchTokens, "batch-tokens", o.BatchTokens, "tokens of windows per engine call (speed only)")
	o.scoreFlags.add(fs, "documents", "source")
}

// validate refuses what scoreFresh cannot run; pos are stray arguments.
func (o *scoreFreshOptions) validate(e *env, pos []string) error {
	if err := o.check(e, pos, o.Model, o.Run.Out); err != nil {
		return err
	}
	return atLeast("batch-tokens", o.BatchTokens, 1)
}

// addWindowFlags registers --window and --stride over their values
// (score fresh, audit artifact).
func addWindowFlags(fs *flag.FlagSet, window, stride *int) {
	fs.IntVar(window, "window", *window, "Fresh Text tokens per window")
	fs.IntVar(stride, "stride", *stride, "Fresh Text tokens between window starts; later windows score only tokens not scored before")
}

// openFreshLlama loads a model with room for one window in the KV cache:
// short documents are packed into it, and a larger cache only makes every
// token attend over more (masked) cells (BENCHMARKS.md).
func openFreshLlama(path string, threads, window int, cpuOnly bool) (runner.Model, error) {
	return openLlama(path, engineOptions{Threads: threads, Context: window, CPUOnly: cpuOnly})
}

// engineOptions are the engine's settings the commands choose (the rest
// keep runner/llama's defaults).
type engineOptions struct {
	Threads, Context, Batch, Parallel int
	CPUOnly                           bool
}

// engineModel is a model the engine loaded: closing it frees the engine's
// memory.
type engineModel interface {
	runner.Model
	Close() error
}

// openLlama loads a GGUF for scoring with its text preparation
// (runner/textprep): the one way both tests, and so the Action, load a
// model.
func openLlama(path string, opts engineOptions) (runner.Model, error) {
	m, err := loadEngine(path, opts)
	if err != nil {
		return nil, err
	}
	w, err := textprep.WrapModel(m)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	return w, nil
}

// freshDataName is Fresh Text's header name for a hub file: OWNER/NAME/path.
func freshDataName(r hub.Ref) string { return r.Repo + "/" + r.Path }

// fetchFromHub resolves hf:// dataset references through the hub client
// (its progress on stderr) for fresh.Load and probes.Load; name says what
// the run header calls the file.
func fetchFromHub(e *env, name func(hub.Ref) string) func(string) (evals.Fetched, error) {
	return func(ref string) (evals.Fetched, error) {
		client := hub.New(e.Getenv)
		client.Progress = e.Stderr
		r, err := client.Resolve(e.Ctx, ref, hub.Dataset)
		if err != nil {
			return evals.Fetched{}, err
		}
		return evals.Fetched{Path: r.Path, Name: name(r.Ref), Revision: r.Ref.Revision}, nil
	}
}

func scoreFresh(e *env, o scoreFreshOptions) error {
	// Data first: a bad file fails before the model is loaded.
	data, err := fresh.Load(o.Data, o.Fetch)
	if err != nil {
		return err
	}
	run, err := o.common(e, runfile.TestFresh, data.Dataset)
	if err != nil {
		return err
	}
	cpuOnly, err := o.cpuOnly()
	if err != nil {
		return err
	}
	m, err := o.Open(o.Model, e.threads(o.Threads), o.Window, cpuOnly)
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
	res, err := fresh.Run(e.Ctx, m, fresh.RunOptions{RunCommon: run, Data: data, Window: o.Window, Stride: o.Stride, BatchTokens: o.BatchTokens})
	if err != nil {
		return err
	}
	if o.JSON {
		return fresh.WriteJSON(e.Stdout, res)
	}
	return fresh.WriteText(e.Stdout, res)
}
