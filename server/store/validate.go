package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// Names are limited to plain characters: they appear in URLs, file-like
// paths and HTML, and a model or run id with a control character, a space
// or a quote is more likely an attack or a bug than a real name.
var (
	idRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:+-]{0,199}$`)
	modelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*(/[A-Za-z0-9][A-Za-z0-9._+-]*)*$`)
	refRE   = regexp.MustCompile(`^[A-Za-z0-9._/+@-]{1,255}$`)
	textRE  = regexp.MustCompile(`^[A-Za-z0-9._:+/@=-]{0,200}$`)
)

// ValidID reports whether s can be a run id.
func ValidID(s string) error {
	if !idRE.MatchString(s) || strings.Contains(s, "..") {
		return invalidf("run id %q: want 1-200 characters of A-Z a-z 0-9 . _ : + - starting with a letter or digit", s)
	}
	return nil
}

// ValidModel reports whether s can be a model name (Hugging Face style,
// slashes allowed between non-empty segments).
func ValidModel(s string) error {
	if len(s) == 0 || len(s) > 200 || !modelRE.MatchString(s) || strings.Contains(s, "..") {
		return invalidf("model name %q: want segments of A-Z a-z 0-9 . _ + - separated by /, up to 200 characters", s)
	}
	return nil
}

// ValidRef reports whether s can be a git ref as stored.
func ValidRef(s string) error {
	if !refRE.MatchString(s) || strings.Contains(s, "..") {
		return invalidf("git ref %q: want 1-255 characters of A-Z a-z 0-9 . _ / + @ -", s)
	}
	return nil
}

// ValidRepo reports whether s is OWNER/NAME.
func ValidRepo(s string) error {
	if !runfile.IsGitRepo(s) {
		return invalidf("repository %q: want OWNER/NAME", s)
	}
	return nil
}

// ValidTest reports whether s names a test.
func ValidTest(s string) error {
	if s != runfile.TestFresh && s != runfile.TestProbes {
		return invalidf("test %q: want %q or %q", s, runfile.TestFresh, runfile.TestProbes)
	}
	return nil
}

// checkIdentity checks what files a run or an audit under a model: its
// name and revision, and the commit it belongs to (where names the part of
// the upload they come from).
func checkIdentity(where, model, revision string, g runfile.Git) error {
	if err := ValidModel(model); err != nil {
		return fmt.Errorf("%s: model.name: %w", where, err)
	}
	if err := ValidRepo(g.Repo); err != nil {
		return fmt.Errorf("%s: git.repo: %w", where, err)
	}
	// A run scored outside CI may name no branch (DESIGN.md: the scorers
	// fill what they can): it is stored, shown as such, and never a
	// baseline, since baselines are looked up by a named ref.
	if g.Ref != "" {
		if err := ValidRef(g.Ref); err != nil {
			return fmt.Errorf("%s: git.ref: %w", where, err)
		}
	}
	for _, f := range []struct{ key, val string }{
		{"model.revision", revision},
		{"git.sha", g.SHA},
	} {
		if !textRE.MatchString(f.val) {
			return invalidf("%s: %s %q: want up to 200 characters of A-Z a-z 0-9 . _ : + / @ = -", where, f.key, f.val)
		}
	}
	if g.PR != nil && *g.PR <= 0 {
		return invalidf("%s: git.pr %d: want a positive number or null", where, *g.PR)
	}
	return nil
}

// CheckedRun is a run CheckRun accepted, with the lines it is stored as
// and the baseline it is to be checked against: the only form PutRun
// takes, so a run is checked once on its way in.
type CheckedRun struct {
	run *runfile.Run
	enc *encoded
	opt PutOptions
	// started is the run's start as stored.
	started int64
}

// Run is the run that was checked.
func (c *CheckedRun) Run() *runfile.Run { return c.run }

// CheckRun refuses a run the store cannot keep whole and meaningful: what
// runfile.Read accepts (every record's numbers), plus the names the pages
// and queries rely on, a start time within the store clock's window, and
// lines within the limit every later reader has. opt is checked with it;
// a sequential run's baseline is the run it was decided against, unless
// opt names one.
func (s *Store) CheckRun(r *runfile.Run, opt PutOptions) (*CheckedRun, error) {
	if err := checkRun(r, s.now()); err != nil {
		return nil, err
	}
	started, err := unixNanos(r.Header.StartedAt)
	if err != nil {
		return nil, err
	}
	if opt.BaseRef == "" {
		opt.BaseRef = runfile.DefaultBaseRef
	}
	if err := ValidRef(opt.BaseRef); err != nil {
		return nil, invalidf("base_ref: %v", err)
	}
	if q := r.Header.Sequential; q != nil && opt.BaselineID == "" {
		opt.BaselineID = q.Baseline
	}
	if opt.BaselineID != "" {
		if err := ValidID(opt.BaselineID); err != nil {
			return nil, &BadBaselineError{Msg: "baseline: " + err.Error()}
		}
	}
	e, err := encode(r)
	if err != nil {
		return nil, fmt.Errorf("store run %s: %w", r.Header.ID, err)
	}
	return &CheckedRun{run: r, enc: e, opt: opt, started: started}, nil
}

// unixNanos is t as stored. Every stored time is inside the window
// runfile.CheckStarted allows, far inside int64 nanoseconds; a time outside
// int64's range is refused here, never wrapped.
func unixNanos(t time.Time) (int64, error) {
	if t.Before(minNanosTime) || t.After(maxNanosTime) {
		return 0, invalidf("time %s is outside the years 1678 to 2262 that can be stored", t.UTC().Format(time.RFC3339))
	}
	return t.UnixNano(), nil
}

// encoded is a run turned into the rows it is stored as, prepared outside
// the write transaction so the lock is held only for the inserts.
type encoded struct {
	header  []byte
	records [][]byte
	ids     []string
	summary []byte
	sum     string
}

// encode turns a run into its stored lines. Each line must fit the line
// limit of runfile.Read, which every later reader uses (the API, push,
// compare), so a run is stored only in a form that can be served back; a
// validated record re-encodes exactly (runfile.Marshal), so only the
// length can fail.
func encode(r *runfile.Run) (*encoded, error) {
	e := &encoded{}
	h := sha256.New()
	line := func(what string, v any) ([]byte, error) {
		b, err := runfile.Marshal(v)
		if err != nil {
			return nil, invalidf("%s: %v", what, err)
		}
		if len(b) >= runfile.MaxLine {
			return nil, invalidf("%s: %d bytes as stored, over the line limit of %d", what, len(b), runfile.MaxLine)
		}
		h.Write(b)
		h.Write([]byte{'\n'})
		return b, nil
	}
	var err error
	if e.header, err = line("header", r.Header); err != nil {
		return nil, err
	}
	add := func(id string, v any) error {
		b, err := line("record "+id, v)
		if err != nil {
			return err
		}
		e.records = append(e.records, b)
		e.ids = append(e.ids, id)
		return nil
	}
	for i := range r.Docs {
		if err := add(r.Docs[i].ID, &r.Docs[i]); err != nil {
			return nil, err
		}
	}
	for _, items := range [][]runfile.Item{r.Items, r.Variants} {
		for i := range items {
			if err := add(items[i].ID, &items[i]); err != nil {
				return nil, err
			}
		}
	}
	e.sum = hex.EncodeToString(h.Sum(nil))
	if r.Header.Test == runfile.TestFresh {
		e.summary, err = runfile.Marshal(runfile.SummarizeFresh(r.Docs))
	} else {
		e.summary, err = runfile.Marshal(runfile.SummarizeProbes(r.Items))
	}
	if err != nil { // a sum that is not a finite number
		return nil, invalidf("run %s summary: %v", r.Header.ID, err)
	}
	return e, nil
}

func checkRun(r *runfile.Run, now time.Time) error {
	h := &r.Header
	if err := ValidID(h.ID); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if err := ValidTest(h.Test); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if err := checkIdentity("header", h.Model.Name, h.Model.Revision, h.Git); err != nil {
		return err
	}
	if err := h.CheckStarted(now); err != nil {
		return invalidf("header: %v", err)
	}
	if q := h.Sequential; q != nil {
		if err := ValidID(q.Baseline); err != nil {
			return invalidf("run %s: sequential.baseline: %v", h.ID, err)
		}
	}
	if h.Shard != nil {
		return invalidf("header: run %s is shard %d/%d: merge the shards (udgam-ci merge) and upload the whole run", h.ID, h.Shard.Index, h.Shard.Count)
	}
	if r.Len() == 0 {
		return invalidf("run %s has a header but no records", h.ID)
	}
	if h.Test == runfile.TestFresh && len(r.Items) > 0 || h.Test == runfile.TestProbes && len(r.Docs) > 0 {
		return invalidf("run %s: records of another test", h.ID)
	}
	if r.Len() > runfile.MaxRecords {
		return invalidf("run %s: %d records, over the limit of %d", h.ID, r.Len(), runfile.MaxRecords)
	}
	for i := range r.Docs {
		if err := r.Docs[i].Validate(); err != nil {
			return invalidf("run %s: %v", h.ID, err)
		}
	}
	for i := range r.Items {
		if err := r.Items[i].Validate(); err != nil {
			return invalidf("run %s: %v", h.ID, err)
		}
	}
	if h.Test == runfile.TestFresh && runfile.SummarizeFresh(r.Docs).Bytes == 0 {
		return invalidf("run %s scores no bytes: bits per byte is undefined", h.ID)
	}
	return nil
}

// InvalidError is input the store refuses: a client's mistake (HTTP 400),
// never the server's.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

func invalidf(format string, a ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, a...)}
}
