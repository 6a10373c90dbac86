package fresh

import (
	"context"
	"fmt"
	"slices"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// RunOptions is one `score fresh` run: the options both scorers share and
// Fresh Text's own.
type RunOptions struct {
	evals.RunCommon
	Data   *Data
	Window int
	Stride int
	// BatchTokens bounds the tokens sent to the engine per call; it does
	// not change results.
	BatchTokens int
}

// spanWork is the bytes of text per token a span's progress counts on.
const spanWork = 4

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
	test := evals.RunTest{Name: runfile.TestFresh, Dataset: opt.Data.Dataset, Keys: keys, Label: "docs", Noun: "documents",
		Settings: func(ho *evals.HeaderOptions) { ho.Window, ho.Stride = opt.Window, opt.Stride }}
	h, idx, err := opt.Begin(m, test)
	if err != nil {
		return Result{}, err
	}
	// The formulation follows from the BOS mode Begin resolved.
	h.Settings.Formulation = Formulation(h.Settings.AddBOS)
	// A sequential run over spans scores one window of a document per
	// record (spans[j], from 1), in the order of the spans.
	spans := opt.Selection.Until.Spans()
	if opt.Reuses(h) {
		// an unchanged model takes the baseline's whole documents, not spans
		spans, idx = nil, slices.Compact(slices.Sorted(slices.Values(idx)))
	}
	if spans != nil && h.Sequential != nil && h.Sequential.Unit == runfile.UnitSpan {
		test.Label, test.Noun = "spans", "spans"
	}
	// Text the tokenizer is known to get wrong fails here, before the run
	// file is written or anything scored.
	pending := make([]evals.Pending, len(idx))
	checked := map[int]bool{}
	for j, i := range idx {
		d := &docs[i]
		if !checked[i] {
			if err := evals.CheckSecondBOS(h.Settings.AddBOS, info, d.Text); err != nil {
				return Result{}, fmt.Errorf("document %s: %w", d.ID, err)
			}
			if err := evals.CheckText(m, d.Text); err != nil {
				return Result{}, fmt.Errorf("document %s: %w", d.ID, err)
			}
			checked[i] = true
		}
		pending[j] = evals.Pending{ID: d.ID, Work: len(d.Text)}
		if j < len(spans) && spans[j] > 0 {
			// about a stride of tokens of text, the ETA's guess
			pending[j] = evals.Pending{ID: runfile.SpanID(d.ID, spans[j]), Work: min(len(d.Text), spanWork*opt.Stride)}
		}
	}
	loop, left, err := opt.Start(h, test, pending)
	if err != nil {
		return Result{}, err
	}
	todo := make([]Part, len(left))
	for j, k := range left {
		todo[j] = Part{Doc: &docs[idx[k]]}
		if k < len(spans) {
			todo[j].Span = spans[k]
		}
	}
	so := ScoreOptions{Window: opt.Window, Stride: opt.Stride, AddBOS: h.Settings.AddBOS, BOS: h.Settings.BOSID, BatchTokens: opt.BatchTokens}
	err = scoreParts(ctx, m, todo, so, func(rec runfile.Doc) error { return loop.Add(rec.ID, rec, rec.Tokens) })
	tally, err := loop.Finish(err)
	if err != nil {
		return Result{}, err
	}
	return Result{Tally: tally, Summary: runfile.SummarizeFresh(tally.Run.Docs)}, nil
}
