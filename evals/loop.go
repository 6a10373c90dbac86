package evals

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// Loop is the resumable record loop both tests run: it opens the run file
// (or resumes it), says what is left, appends each record as it is scored
// with progress, and on the way out closes the file, adds the resume hint
// to an error and reads the whole file back. The tests differ only in what
// they select, check and score.
type Loop struct {
	out   *Output
	prog  *Progress
	opt   LoopOptions
	now   func() time.Time
	work  map[string]int
	start time.Time
	tally Tally
	until *untilState // nil for a fixed run
}

// LoopOptions are what the two tests' RunOptions share about the run file
// and progress, and the nouns that name their records.
type LoopOptions struct {
	Out      string // run file
	Resume   bool   // continue Out, skipping the records it already holds
	Progress io.Writer
	Terminal bool
	Now      func() time.Time
	Label    string // progress label: "docs", "items"
	Noun     string // in messages: "documents", "items"
	// Until makes the run sequential; sel must then be in its order
	// (Until.Order).
	Until *Until
	// Reuse holds the record of each selected record, taken from the
	// baseline run of an unchanged model instead of scored (RunCommon.Start).
	Reuse []any
}

// Pending is one selected record: its id, and its work in bytes of text,
// which the ETA follows (a long document takes longer than a short one).
type Pending struct {
	ID   string
	Work int
}

// Tally is what a finished run reports beside its test's summary.
type Tally struct {
	Out     string
	Run     *runfile.Run // the whole file, read back (a resumed run's earlier records too)
	Seconds float64      // scoring time of this invocation
	Scored  int          // records scored by this invocation
	Tokens  int          // tokens scored by this invocation
	Skipped int          // records already in a resumed file
	Reused  int          // records taken from the baseline of an unchanged model
	Resumed bool
	Stop    *runfile.Stop // a sequential run's stop
}

// StartLoop opens the run file with header h, or resumes it, and starts
// progress over the selected records. It returns the positions in sel of
// the records still to score, in order.
func StartLoop(h runfile.Header, sel []Pending, opt LoopOptions) (*Loop, []int, error) {
	out, err := OpenOutput(opt.Out, h, opt.Resume)
	if err != nil {
		return nil, nil, err
	}
	l := &Loop{out: out, opt: opt, now: opt.Now, work: map[string]int{}}
	if l.now == nil {
		l.now = time.Now
	}
	stopped := false
	if opt.Until != nil {
		l.until = &untilState{u: opt.Until}
		if err := l.until.feed(out.Prior); err != nil {
			out.Close()
			return nil, nil, fmt.Errorf("resume %s: %w", opt.Out, err)
		}
		stopped = l.until.reason != ""
	}
	if opt.Reuse != nil {
		if err := reuseRecords(out, sel, opt.Reuse, opt.Progress); err != nil {
			out.Close()
			return nil, nil, fmt.Errorf("%s: %w", opt.Out, err)
		}
	}
	var todo []int
	total := 0
	for i, p := range sel {
		if !out.Done(p.ID) && !stopped {
			todo = append(todo, i)
			l.work[p.ID] = p.Work
			total += p.Work
		}
	}
	l.tally = Tally{Out: opt.Out, Resumed: out.Resumed, Skipped: len(sel) - len(todo) - len(opt.Reuse), Reused: len(opt.Reuse)}
	l.prog = NewProgress(opt.Progress, len(sel), ProgressOptions{Label: opt.Label, Terminal: opt.Terminal, Now: l.now, TotalWork: total})
	l.prog.Skip(len(sel)-len(todo), 0)
	if opt.Progress != nil {
		for _, n := range SelectionNotes(h, opt.Noun) {
			fmt.Fprintf(opt.Progress, "note: %s\n", n)
		}
	}
	if l.tally.Skipped > 0 && opt.Progress != nil {
		fmt.Fprintf(opt.Progress, "resuming %s: %d %s already scored, %d to go\n", opt.Out, l.tally.Skipped, opt.Noun, len(todo))
	}
	l.start = l.now()
	return l, todo, nil
}

// reuseRecords appends the records of an unchanged model's baseline that
// the file does not hold yet, and says so.
func reuseRecords(out *Output, sel []Pending, recs []any, progress io.Writer) error {
	for i, p := range sel {
		if out.Done(p.ID) {
			continue
		}
		if err := out.Append(p.ID, recs[i]); err != nil {
			return err
		}
	}
	if progress != nil {
		fmt.Fprintln(progress, out.Header.Reused.Line())
	}
	return nil
}

// Header is the run file's header: the stored one when resumed.
func (l *Loop) Header() runfile.Header { return l.out.Header }

// Add appends the record of id (a runfile.Doc or runfile.Item), scored
// with tokens tokens, and advances progress.
func (l *Loop) Add(id string, rec any, tokens int) error {
	if err := l.out.Append(id, rec); err != nil {
		return err
	}
	l.tally.Scored++
	l.tally.Tokens += tokens
	l.prog.AddWork(1, tokens, l.work[id])
	if u := l.until; u != nil {
		if err := u.u.Tracker.Add(rec); err != nil {
			return err
		}
		u.warn(l.opt.Progress, l.opt.Noun)
		if u.check(l.now().Sub(l.start)) {
			return errDecided
		}
	}
	return nil
}

// Finish ends the loop after scoring returned err: it stops progress and
// closes the file; on an error it says how many records the file holds and
// that --resume continues; else it reads the whole file back.
func (l *Loop) Finish(err error) (Tally, error) {
	l.tally.Seconds = l.now().Sub(l.start).Seconds()
	if errors.Is(err, errDecided) {
		err = nil
	}
	l.prog.Done()
	if cerr := l.out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Tally{}, fmt.Errorf("%w (%d %s are in %s; run again with --resume to continue)", err, l.out.DoneCount(), l.opt.Noun, l.opt.Out)
	}
	run, err := runfile.ReadFile(l.opt.Out)
	if err != nil {
		return Tally{}, err
	}
	if l.until != nil {
		stop := l.until.finish(run)
		if l.opt.Progress != nil {
			fmt.Fprintln(l.opt.Progress, StopLine(run.Header.Sequential, *SequentialCost(run), l.opt.Noun))
		}
		if err := runfile.WriteFile(l.opt.Out, run); err != nil {
			return Tally{}, fmt.Errorf("record the stop in %s: %w", l.opt.Out, err)
		}
		l.tally.Stop = &stop
	}
	l.tally.Run = run
	return l.tally, nil
}
