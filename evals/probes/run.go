package probes

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// RunOptions describe one scoring run.
type RunOptions struct {
	Set     *Set
	Out     string // run file
	Resume  bool   // continue Out, skipping the items it already holds
	BOSMode string // auto|yes|no
	Batch   int    // items per Score call

	SampleN       int // 0: every item
	SampleSeed    int64
	Shard         *runfile.Shard
	Limit         int // 0: no limit; else the first Limit selected, in data order
	Contamination *runfile.Contamination

	Header evals.HeaderOptions // model name/revision, git, runtime, clock; the rest is filled here

	Progress io.Writer // progress lines; nil for none
	Terminal bool      // draw a bar instead of lines
	Now      func() time.Time
}

// Run scores the selected items on m, appending a record per item to the
// run file as it completes, and returns the summary of every record in the
// file (a resumed run includes the earlier ones).
func Run(ctx context.Context, m runner.Model, opt RunOptions) (Summary, error) {
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	start := now()
	items := opt.Set.Items
	keys := make([]evals.Keyed, len(items))
	for i, it := range items {
		keys[i] = evals.Keyed{ID: it.ID, Group: runfile.LevelKey(it.Type, it.Level)}
	}
	sel, idx, err := evals.Select(keys, opt.SampleN, opt.SampleSeed, opt.Shard, opt.Limit, opt.Contamination)
	if err != nil {
		return Summary{}, err
	}
	ho := opt.Header
	ho.Dataset = opt.Set.Dataset()
	ho.BOSMode = opt.BOSMode
	ho.Formulation = Formulation
	ho.TextPrep = evals.TextPrepOf(m)
	ho.Sample, ho.Shard, ho.Contamination = sel.Sample, sel.Shard, sel.Contamination
	if ho.Now == nil {
		ho.Now = now
	}
	h, err := evals.NewHeader(runfile.TestProbes, m.Info(), ho)
	if err != nil {
		return Summary{}, err
	}
	// Text the tokenizer is known to get wrong fails here, before the run
	// file is written or anything scored.
	for _, i := range idx {
		it := &items[i]
		for _, text := range append([]string{it.Prompt}, ChoiceTexts(it)...) {
			if err := evals.CheckText(m, text); err != nil {
				return Summary{}, fmt.Errorf("item %s: %w", it.ID, err)
			}
		}
	}
	out, err := evals.OpenOutput(opt.Out, h, opt.Resume)
	if err != nil {
		return Summary{}, err
	}
	defer out.Close()

	var todo []Item
	for _, i := range idx {
		if !out.Done(items[i].ID) {
			todo = append(todo, items[i])
		}
	}
	// The ETA follows the text left to score (prompt and choices): items
	// differ in length, and the first batches are the slow ones.
	itemBytes := map[string]int{}
	work := 0
	for _, it := range todo {
		n := len(it.Prompt)
		for _, c := range it.Choices {
			n += len(c) + 1
		}
		itemBytes[it.ID] = n
		work += n
	}
	progress := evals.NewProgress(opt.Progress, len(idx), evals.ProgressOptions{Label: "items", Terminal: opt.Terminal, Now: now, TotalWork: work})
	progress.Skip(len(idx)-len(todo), 0)
	if done := len(idx) - len(todo); done > 0 && opt.Progress != nil {
		fmt.Fprintf(opt.Progress, "resuming %s: %d items already scored, %d to go\n", opt.Out, done, len(todo))
	}
	records := append([]runfile.Item(nil), out.Prior.Items...)
	s := Scorer{Model: m, AddBOS: out.Header.Settings.AddBOS, BOS: out.Header.Settings.BOSID, Batch: opt.Batch}
	err = s.Score(ctx, todo, func(rec runfile.Item) error {
		if err := out.Append(rec.ID, rec); err != nil {
			return err
		}
		records = append(records, rec)
		progress.AddWork(1, rec.Tokens, itemBytes[rec.ID])
		return nil
	})
	progress.Done()
	if err != nil {
		return Summary{}, fmt.Errorf("%w (%d items are in %s; rerun with --resume to continue)", err, len(records), opt.Out)
	}
	if err := out.Close(); err != nil {
		return Summary{}, err
	}
	return Summarize(out.Header, records, now().Sub(start)), nil
}

// Dataset describes the set for a run header.
func (s *Set) Dataset() runfile.Dataset {
	return runfile.Dataset{Name: s.Name, Revision: s.Revision, SHA256: s.SHA256, Count: len(s.Items), Constant: ConstantBest(s.Items)}
}
