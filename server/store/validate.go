package store

import (
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

// CheckedRun is a run CheckRun accepted, with the lines it is stored as:
// the only form PutRun takes, so a run is checked once on its way in.
type CheckedRun struct {
	run *runfile.Run
	enc *encoded
}

// Run is the run that was checked.
func (c *CheckedRun) Run() *runfile.Run { return c.run }

// CheckRun refuses a run the store cannot keep whole and meaningful: what
// runfile.Read accepts (every record's numbers), plus the names the pages
// and queries rely on, a start time within the store clock's window, and
// lines within the limit every later reader has.
func (s *Store) CheckRun(r *runfile.Run) (*CheckedRun, error) {
	if err := checkRun(r, s.now()); err != nil {
		return nil, err
	}
	e, err := encode(r)
	if err != nil {
		return nil, fmt.Errorf("store run %s: %w", r.Header.ID, err)
	}
	return &CheckedRun{run: r, enc: e}, nil
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
