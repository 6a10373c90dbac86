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

// RunOptions is one `score fresh` run. Its fields mirror probes.RunOptions
// where the two mean the same thing.
type RunOptions struct {
	Data    *Data
	Out     string // run file
	Resume  bool   // continue Out, skipping the documents it already holds
	BOSMode string // auto|yes|no
	Window  int
	Stride  int
	// BatchTokens bounds the tokens sent to the engine per call; it does
	// not change results.
	BatchTokens int

	SampleN       int // 0: every document
	SampleSeed    int64
	Shard         *runfile.Shard
	Limit         int // 0: no limit; else the first Limit selected, in data order
	Contamination *runfile.Contamination
	// Until makes the run sequential: the set in a seeded random order,
	// stopping once the comparison with a baseline decides.
	Until *evals.Until

	Header evals.HeaderOptions // model name/revision, git, runtime, clock; the rest is filled here

	Progress io.Writer // progress lines; nil for none
	Terminal bool      // draw a bar instead of lines
	Now      func() time.Time
}

// Result is a finished run: the shared tally and the whole file's scores.
type Result struct {
	evals.Tally
	Summary runfile.FreshSummary
}

// Run scores the selected documents on m into opt.Out, appending a record
// per document as it completes, and reads the file back for the summary
// (a resumed run includes the earlier records). The data are checked
// before anything is scored; a failure leaves a file that --resume
// continues.
func Run(ctx context.Context, m runner.Model, opt RunOptions) (Result, error) {
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	if err := validateWindow(opt.Window, opt.Stride); err != nil {
		return Result{}, err
	}
	info := m.Info()
	if info.ContextLength > 0 && opt.Window > info.ContextLength {
		return Result{}, fmt.Errorf("window %d is longer than the model's context length %d (%s)", opt.Window, info.ContextLength, fitHint(info.ContextLength, opt.Stride))
	}
	docs := opt.Data.Docs
	keys := make([]evals.Keyed, len(docs))
	for i, d := range docs {
		keys[i] = evals.Keyed{ID: d.ID, Group: d.Source}
	}
	sel, idx, err := evals.SelectUntil(keys, opt.SampleN, opt.SampleSeed, opt.Shard, opt.Limit, opt.Contamination, opt.Until)
	if err != nil {
		return Result{}, err
	}
	ho := opt.Header
	ho.Dataset = opt.Data.Dataset
	ho.BOSMode = opt.BOSMode
	ho.Window, ho.Stride = opt.Window, opt.Stride
	ho.TextPrep = evals.TextPrepOf(m)
	ho.Sample, ho.Shard, ho.Contamination = sel.Sample, sel.Shard, sel.Contamination
	ho.Sequential = evals.HeaderOf(opt.Until)
	if ho.Now == nil {
		ho.Now = now
	}
	// NewHeader resolves the BOS mode (an impossible one fails here);
	// the formulation follows from it.
	h, err := evals.NewHeader(runfile.TestFresh, info, ho)
	if err != nil {
		return Result{}, err
	}
	h.Settings.Formulation = Formulation(h.Settings.AddBOS)
	// Text the tokenizer is known to get wrong fails here, before the run
	// file is written or anything scored.
	pending := make([]evals.Pending, len(idx))
	for j, i := range idx {
		d := &docs[i]
		if err := evals.CheckSecondBOS(h.Settings.AddBOS, info, d.Text); err != nil {
			return Result{}, fmt.Errorf("document %s: %w", d.ID, err)
		}
		if err := evals.CheckText(m, d.Text); err != nil {
			return Result{}, fmt.Errorf("document %s: %w", d.ID, err)
		}
		pending[j] = evals.Pending{ID: d.ID, Work: len(d.Text)}
	}
	loop, left, err := evals.StartLoop(h, pending, evals.LoopOptions{Out: opt.Out, Resume: opt.Resume,
		Progress: opt.Progress, Terminal: opt.Terminal, Now: now, Until: opt.Until, Label: "docs", Noun: "documents"})
	if err != nil {
		return Result{}, err
	}
	todo := make([]Document, len(left))
	for j, k := range left {
		todo[j] = docs[idx[k]]
	}
	so := ScoreOptions{Window: opt.Window, Stride: opt.Stride, AddBOS: h.Settings.AddBOS, BOS: h.Settings.BOSID, BatchTokens: opt.BatchTokens}
	err = score(ctx, m, todo, so, func(rec runfile.Doc) error { return loop.Add(rec.ID, rec, rec.Tokens) })
	tally, err := loop.Finish(err)
	if err != nil {
		return Result{}, err
	}
	return Result{Tally: tally, Summary: runfile.SummarizeFresh(tally.Run.Docs)}, nil
}
