package probes

import (
	"context"
	"fmt"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// RunOptions is one `score probes` run: the options both scorers share and
// the Probe Suite's own.
type RunOptions struct {
	evals.RunCommon
	Data  *Set
	Batch int // items per Score call
	// Variants are the prompt variants scored besides the published
	// template (ParseVariants), for each selected item.
	Variants []string
}

// Result is a finished run: the shared tally and the whole file's scores.
type Result struct {
	evals.Tally
	Summary Summary
}

// Run scores the selected items on m into opt.Out, appending a record per
// item as it completes, and reads the file back for the summary (a resumed
// run includes the earlier records). The items are checked before
// anything is scored; a failure leaves a file that --resume continues.
func Run(ctx context.Context, m runner.Model, opt RunOptions) (Result, error) {
	info := m.Info()
	items := opt.Data.Items
	test := evals.RunTest{Name: runfile.TestProbes, Dataset: opt.Data.Dataset(), Keys: Keys(items), Label: "items", Noun: "items",
		Settings: func(ho *evals.HeaderOptions) { ho.Formulation = Formulation }}
	h, idx, err := opt.Begin(m, test)
	if err != nil {
		return Result{}, err
	}
	// Text the tokenizer is known to get wrong fails here, before the run
	// file is written or anything scored.
	chosen := make([]Item, len(idx))
	for j, i := range idx {
		chosen[j] = items[i]
	}
	variants, err := VariantItems(chosen, opt.Variants)
	if err != nil {
		return Result{}, err
	}
	all := append(chosen, variants...)
	pending := make([]evals.Pending, len(all))
	for j := range all {
		it := &all[j]
		if err := evals.CheckSecondBOS(h.Settings.AddBOS, info, it.Prompt); err != nil {
			return Result{}, fmt.Errorf("item %s: %w", it.ID, err)
		}
		for _, text := range append([]string{it.Prompt}, ChoiceTexts(it)...) {
			if err := evals.CheckText(m, text); err != nil {
				return Result{}, fmt.Errorf("item %s: %w", it.ID, err)
			}
		}
		pending[j] = evals.Pending{ID: it.ID, Work: textBytes(it)}
	}
	loop, left, err := opt.Start(h, test, pending)
	if err != nil {
		return Result{}, err
	}
	// The published items are scored first and on their own, in the
	// batches a run without variants makes, so their scores are the same.
	var todo, todoVariants []Item
	for _, k := range left {
		if all[k].Variant == "" {
			todo = append(todo, all[k])
		} else {
			todoVariants = append(todoVariants, all[k])
		}
	}
	so := ScoreOptions{AddBOS: h.Settings.AddBOS, BOS: h.Settings.BOSID, Batch: opt.Batch}
	emit := func(rec runfile.Item) error { return loop.Add(rec.ID, rec, rec.Tokens) }
	err = Score(ctx, m, todo, so, emit)
	if err == nil {
		err = Score(ctx, m, todoVariants, so, emit)
	}
	tally, err := loop.Finish(err)
	if err != nil {
		return Result{}, err
	}
	return Result{Tally: tally, Summary: Summarize(tally.Run.Header, tally.Run.Items, tally.Seconds)}, nil
}

// Keys are the items as --sample and --shard select them: stratified by
// type and level.
func Keys(items []Item) []evals.Keyed {
	keys := make([]evals.Keyed, len(items))
	for i, it := range items {
		keys[i] = evals.Keyed{ID: it.ID, Group: runfile.LevelKey(it.Type, it.Level)}
	}
	return keys
}

// textBytes is the text scoring an item reads, the prompt and each choice:
// the unit its progress ETA follows.
func textBytes(it *Item) int {
	n := len(it.Prompt)
	for _, c := range it.Choices {
		n += len(c) + 1
	}
	return n
}

// Dataset describes the set for a run header.
func (s *Set) Dataset() runfile.Dataset {
	return runfile.Dataset{Name: s.Name, Revision: s.Revision, SHA256: s.SHA256, Count: len(s.Items), Constant: ConstantBest(s.Items)}
}
