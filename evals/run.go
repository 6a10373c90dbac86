package evals

import (
	"fmt"
	"io"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// RunCommon are the options both scorers share (fresh.RunOptions and
// probes.RunOptions embed it): where the run goes, which records it
// scores, how BOS is put, what its header says and how it shows progress.
// The command line and the Action fill it alike; a zero field is the
// default.
type RunCommon struct {
	Out       string // run file
	Resume    bool   // continue Out, skipping the records it already holds
	BOSMode   string // auto|yes|no
	Selection Selection
	// Reuse is a baseline run whose records this run takes instead of
	// scoring when its model is unchanged (runfile.Unchanged: the same GGUF
	// fingerprint and settings); nil scores.
	Reuse *runfile.Run
	// Header is what the caller knows (model name and revision, git,
	// runtime, clock); Begin fills the rest.
	Header HeaderOptions

	Progress io.Writer // progress lines; nil for none
	Terminal bool      // draw a bar instead of lines
	Now      func() time.Time
}

// RunTest is what a scorer tells Begin and Start about its test.
type RunTest struct {
	Name    string // runfile.TestFresh or runfile.TestProbes
	Dataset runfile.Dataset
	Keys    []Keyed // the data's records, as Select sees them
	// Settings fills the test's own header settings (window, formulation).
	Settings func(*HeaderOptions)
	Label    string // progress label: "docs", "items"
	Noun     string // in messages: "documents", "items"
}

// now is the run's clock.
func (c *RunCommon) now() func() time.Time {
	if c.Now != nil {
		return c.Now
	}
	return time.Now
}

// Begin is both scorers' prologue: it selects the records (indexes into
// t.Keys, in the order they are scored) and makes the run header, which
// resolves the BOS mode, so an impossible one fails here. The scorer then
// checks the selected records' text and calls Start.
func (c *RunCommon) Begin(m runner.Model, t RunTest) (runfile.Header, []int, error) {
	sel, idx, err := Select(t.Keys, c.Selection)
	if err != nil {
		return runfile.Header{}, nil, err
	}
	ho := c.Header
	ho.Dataset = t.Dataset
	ho.BOSMode = c.BOSMode
	ho.TextPrep = TextPrepOf(m)
	ho.Sample, ho.Shard, ho.Contamination = sel.Sample, sel.Shard, sel.Contamination
	ho.Sequential = HeaderOf(c.Selection.Until)
	if ho.Now == nil {
		ho.Now = c.now()
	}
	if t.Settings != nil {
		t.Settings(&ho)
	}
	h, err := NewHeader(t.Name, m.Info(), ho)
	return h, idx, err
}

// Reuses says whether the run with header h takes c.Reuse's records, an
// unchanged model's, instead of scoring (Start writes them).
func (c *RunCommon) Reuses(h runfile.Header) bool {
	return c.Reuse != nil && !c.Resume && runfile.Unchanged(&h, &c.Reuse.Header) == nil
}

// Start opens the run file (or resumes it) and the record loop over
// pending, the checked records; it returns the loop and the indexes into
// pending still to score.
// When c.Reuse holds the records of an unchanged model, the file gets them
// and nothing is left to score.
func (c *RunCommon) Start(h runfile.Header, t RunTest, pending []Pending) (*Loop, []int, error) {
	opt := LoopOptions{Out: c.Out, Resume: c.Resume, Progress: c.Progress, Terminal: c.Terminal,
		Now: c.now(), Until: c.Selection.Until, Label: t.Label, Noun: t.Noun}
	// A resumed file goes on as it began: scored, or reused at once.
	if c.Reuse != nil && !c.Resume {
		recs, err := reuse(&h, c.Reuse, pending)
		switch {
		case err != nil && c.Progress != nil:
			fmt.Fprintf(c.Progress, "note: the model is scored: its records cannot be reused from baseline run %s: %v\n", c.Reuse.Header.ID, err)
		case err == nil:
			opt.Until, opt.Reuse = nil, recs
		}
	}
	return StartLoop(h, pending, opt)
}
