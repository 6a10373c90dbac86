//go:build cgo

// Command flops counts the useful floating-point operations (runner.FLOPs,
// as the engine's planner feeds them) of exactly the requests `udgam-ci score fresh` or `score probes` sends the
// engine for a data file: it runs the scorer itself (fresh.Score,
// probes.Score) on the model's real tokenizer, through a model whose Score
// records each request and answers it with log-probabilities of 0, so the
// count follows the scorer's own windows and shared prompts. run.sh divides
// it by the scoring's seconds and by the FMA peak. It also prints the cells
// of the KV cache the command opens (one window for score fresh,
// probes.Cells for score probes, as llama.cpp sizes them) and that cache's
// size in float32, for the memory budget.
//
//	go run ./scripts/llamacpp/flops -model M -fresh docs.jsonl -window 2048 -stride 1024
//	go run ./scripts/llamacpp/flops -model M -probes probes.jsonl
//
// It prints one line: flops=F requests=N cells=C kv_bytes=B. Every document
// or item in the file is counted, as run.sh scores them all.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/textprep"
)

// options is one count: the model and what one score command gets.
type options struct {
	Model          string
	Fresh, Probes  string // the data file of one of the two
	Window, Stride int
	AddBOS         string
}

func main() {
	var o options
	flag.StringVar(&o.Model, "model", "", "GGUF model file (llama architecture)")
	flag.StringVar(&o.Fresh, "fresh", "", "documents (JSONL or Parquet), as score fresh --data gets them")
	flag.StringVar(&o.Probes, "probes", "", "items (JSONL or Parquet), as score probes --items gets them")
	flag.IntVar(&o.Window, "window", 0, "score fresh's --window")
	flag.IntVar(&o.Stride, "stride", 0, "score fresh's --stride")
	flag.StringVar(&o.AddBOS, "add-bos", evals.BOSAuto, "the score command's --add-bos")
	flag.Parse()
	if o.Model == "" || (o.Fresh == "") == (o.Probes == "") || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: flops -model M (-fresh DOCS -window W -stride S | -probes ITEMS) [-add-bos auto|yes|no]")
		os.Exit(2)
	}
	if err := run(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "flops:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, o options) error {
	shape, err := runner.ReadShape(o.Model)
	if err != nil {
		return err
	}
	c, err := count(context.Background(), o)
	if err != nil {
		return err
	}
	flops := 0.0
	for _, call := range c.calls() {
		flops += runner.FLOPs(shape, call, c.lim)
	}
	_, err = fmt.Fprintf(w, "flops=%.0f requests=%d cells=%d kv_bytes=%d\n",
		flops, len(c.reqs), c.lim.Cells, shape.KVBytes(c.lim.Cells))
	return err
}

// counted is what a scorer asked of the engine, call by call, and the
// limits the engine plans them under (lim.Cells: the cells of the context
// the command opens).
type counted struct {
	reqs []runner.Request
	ends []int // where each Score call's requests end in reqs
	lim  runner.Limits
}

// calls splits reqs into the engine calls that sent them: the planner
// packs and shares within one call.
func (c counted) calls() [][]runner.Request {
	var out [][]runner.Request
	start := 0
	for _, end := range c.ends {
		out = append(out, c.reqs[start:end])
		start = end
	}
	return out
}

// count runs the scorer o names over its data on a recorder around the
// model loaded as the score command loads it (the same cache cells, the
// same text preparation), and returns the requests it issued.
func count(ctx context.Context, o options) (counted, error) {
	cells := probes.Cells
	if o.Fresh != "" {
		cells = o.Window // score fresh opens one window
	}
	// One thread: the model only tokenizes here.
	m, err := llama.Load(o.Model, llama.Options{Threads: 1, Context: cells, CPUOnly: true})
	if err != nil {
		return counted{}, err
	}
	defer m.Close()
	rec := &recorder{Model: m}
	tm, err := textprep.WrapModel(rec)
	if err != nil {
		return counted{}, fmt.Errorf("model %s: %w", o.Model, err)
	}
	info := tm.Info()
	addBOS, err := evals.ResolveBOS(o.AddBOS, info)
	if err != nil {
		return counted{}, err
	}
	if o.Fresh != "" {
		data, err := fresh.LoadFile(o.Fresh)
		if err != nil {
			return counted{}, err
		}
		so := fresh.ScoreOptions{Window: o.Window, Stride: o.Stride, AddBOS: addBOS, BOS: info.BOS}
		err = fresh.Score(ctx, tm, data.Docs, so, func(runfile.Doc) error { return nil })
		if err != nil {
			return counted{}, err
		}
	} else {
		set, err := probes.LoadFile(o.Probes)
		if err != nil {
			return counted{}, err
		}
		so := probes.ScoreOptions{AddBOS: addBOS, BOS: info.BOS}
		err = probes.Score(ctx, tm, set.Items, so, func(runfile.Item) error { return nil })
		if err != nil {
			return counted{}, err
		}
	}
	if len(rec.reqs) == 0 {
		return counted{}, errors.New("the scorer issued no requests")
	}
	// llama.cpp rounds the context up (to 256 cells): the cells it opened.
	return counted{reqs: rec.reqs, ends: rec.ends, lim: m.Limits()}, nil
}

// recorder is the loaded model with a Score that keeps the requests it is
// given and answers each with log-probabilities of 0 in the shape asked
// for, so a scorer runs to its end issuing the requests it would send the
// engine. Everything else (the tokenizer, the token bytes scoring without
// BOS needs) is the model's own.
type recorder struct {
	*llama.Model
	reqs []runner.Request
	ends []int
}

func (r *recorder) Score(_ context.Context, reqs []runner.Request) ([]runner.Result, error) {
	// The structs are copied: a scorer may reuse its slice of them.
	r.reqs = append(r.reqs, reqs...)
	r.ends = append(r.ends, len(r.reqs))
	return runner.NewResults(reqs), nil
}

// ScoreEach goes through Score, so the engine's own ScoreEach (promoted
// from the embedded model) never scores past the recorder.
func (r *recorder) ScoreEach(ctx context.Context, reqs []runner.Request, done func(int, runner.Result) error) error {
	return runner.ScoreEach(ctx, scoreOnly{r}, reqs, done)
}

// scoreOnly hides every method but Score.
type scoreOnly struct{ runner.Scorer }
