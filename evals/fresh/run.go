package fresh

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// RunOptions is one `score fresh` run.
type RunOptions struct {
	Model   runner.Model
	Data    *Data
	Out     string // run file
	Resume  bool
	BOSMode string // auto|yes|no
	Window  int
	Stride  int
	// BatchTokens bounds the tokens sent to the engine per call; it does
	// not change results.
	BatchTokens   int
	SampleN       int   // 0: every document
	SampleSeed    int64 // of the sample
	Shard         *runfile.Shard
	Limit         int // 0: no limit
	Contamination *runfile.Contamination
	// Header carries the model name and revision, git fields, runtime,
	// clock and randomness; the test's own fields are set here.
	Header   evals.HeaderOptions
	Progress io.Writer // nil: no progress
	Terminal bool      // draw a bar rather than plain lines
	Now      func() time.Time
}

// Result is a finished run.
type Result struct {
	Out     string
	Run     *runfile.Run // the whole file, read back
	Summary runfile.FreshSummary
	Seconds float64 // scoring time of this invocation
	Scored  int     // documents scored by this invocation
	Tokens  int     // tokens scored by this invocation
	Skipped int     // documents already in a resumed file
	Resumed bool
}

// Run scores the selected documents into opt.Out and reads the file back
// for the summary. The data are validated before anything is scored; a
// failure leaves a file that --resume continues.
func Run(ctx context.Context, opt RunOptions) (*Result, error) {
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	if err := validateWindow(opt.Window, opt.Stride); err != nil {
		return nil, err
	}
	info := opt.Model.Info()
	if info.ContextLength > 0 && opt.Window > info.ContextLength {
		return nil, fmt.Errorf("window %d is longer than the model's context length %d (use --window %d)", opt.Window, info.ContextLength, info.ContextLength)
	}
	addBOS, err := evals.ResolveBOS(opt.BOSMode, info)
	if err != nil {
		return nil, err
	}
	docs := opt.Data.Docs
	keys := make([]evals.Keyed, len(docs))
	for i, d := range docs {
		keys[i] = evals.Keyed{ID: d.ID, Group: d.Source}
	}
	sel, idx, err := evals.Select(keys, opt.SampleN, opt.SampleSeed, opt.Shard, opt.Limit, opt.Contamination)
	if err != nil {
		return nil, err
	}

	ho := opt.Header
	ho.Dataset = opt.Data.Dataset
	ho.BOSMode = opt.BOSMode
	ho.Window, ho.Stride = opt.Window, opt.Stride
	ho.Formulation = Formulation(addBOS)
	ho.TextPrep = evals.TextPrepOf(opt.Model)
	ho.Sample, ho.Shard, ho.Contamination = sel.Sample, sel.Shard, sel.Contamination
	if ho.Now == nil {
		ho.Now = now
	}
	h, err := evals.NewHeader(runfile.TestFresh, info, ho)
	if err != nil {
		return nil, err
	}
	// Text the tokenizer is known to get wrong fails here, before the run
	// file is written or anything scored.
	for _, i := range idx {
		if err := evals.CheckText(opt.Model, docs[i].Text); err != nil {
			return nil, fmt.Errorf("document %s: %w", docs[i].ID, err)
		}
	}
	out, err := evals.OpenOutput(opt.Out, h, opt.Resume)
	if err != nil {
		return nil, err
	}
	var todo []Document
	for _, i := range idx {
		if !out.Done(docs[i].ID) {
			todo = append(todo, docs[i])
		}
	}

	res := &Result{Out: opt.Out, Resumed: out.Resumed, Skipped: len(idx) - len(todo)}
	// The ETA follows the bytes left: a long document takes longer than a
	// short one, and the time per byte settles after the first few.
	textBytes := map[string]int{}
	work := 0
	for _, d := range todo {
		textBytes[d.ID] = len(d.Text)
		work += len(d.Text)
	}
	prog := evals.NewProgress(opt.Progress, len(idx), evals.ProgressOptions{Label: "docs", Terminal: opt.Terminal, Now: now, TotalWork: work})
	prog.Skip(res.Skipped, 0)
	if res.Skipped > 0 && opt.Progress != nil {
		fmt.Fprintf(opt.Progress, "resuming %s: %d documents already scored, %d to go\n", opt.Out, res.Skipped, len(todo))
	}

	start := now()
	so := ScoreOptions{Window: opt.Window, Stride: opt.Stride, AddBOS: addBOS, BOS: info.BOS, BatchTokens: opt.BatchTokens}
	err = Score(ctx, opt.Model, todo, so, func(d runfile.Doc) error {
		if err := out.Append(d.ID, d); err != nil {
			return err
		}
		res.Scored++
		res.Tokens += d.Tokens
		prog.AddWork(1, d.Tokens, textBytes[d.ID])
		return nil
	})
	res.Seconds = now().Sub(start).Seconds()
	prog.Done()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("%w (%d documents are in %s; run again with --resume to continue)", err, out.DoneCount(), opt.Out)
	}
	run, err := runfile.ReadFile(opt.Out)
	if err != nil {
		return nil, err
	}
	res.Run = run
	res.Summary = runfile.SummarizeFresh(run.Docs)
	return res, nil
}
