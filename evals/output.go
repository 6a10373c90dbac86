package evals

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// Output is a run file being written: a new one, or one a killed run left
// that is being resumed. It knows which ids are done so nothing is scored
// twice.
type Output struct {
	// Header is the file's header: the stored one when resumed (its run id
	// and start time are kept), else the one given.
	Header runfile.Header
	// Prior holds the records already in a resumed file.
	Prior   *runfile.Run
	Resumed bool

	w    *runfile.Writer
	done map[string]bool
}

// OpenOutput creates the run file at path with header h or, when resume is
// set and the file exists, reopens it after checking its header matches h
// in everything that changes results (a torn last line is cut). With
// resume set and no file yet, it starts one: a retried CI step just works.
func OpenOutput(path string, h runfile.Header, resume bool) (*Output, error) {
	o := &Output{Header: h, done: map[string]bool{}}
	if resume {
		w, prior, err := runfile.Resume(path, h)
		switch {
		case err == nil:
			o.w, o.Prior, o.Resumed, o.Header = w, prior, true, prior.Header
			for _, id := range prior.IDs() {
				o.done[id] = true
			}
			return o, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	w, err := runfile.Create(path, h)
	if err != nil {
		return nil, err
	}
	o.w = w
	o.Prior = &runfile.Run{Header: h}
	return o, nil
}

// Done reports whether id already has a record.
func (o *Output) Done(id string) bool { return o.done[id] }

// DoneCount is the number of ids with a record.
func (o *Output) DoneCount() int { return len(o.done) }

// Append writes the record of id (a runfile.Doc or runfile.Item) and syncs
// it. A second record for the same id is refused: it would count twice.
func (o *Output) Append(id string, rec any) error {
	if o.done[id] {
		return fmt.Errorf("run file: %s already has a record", id)
	}
	if err := o.w.Append(rec); err != nil {
		return err
	}
	o.done[id] = true
	return nil
}

// Close closes the file.
func (o *Output) Close() error { return o.w.Close() }
