package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Run is one stored run without its records: a row, not the wire format
// (the server sends client.Run).
type Run struct {
	ID         string
	Test       string
	Model      string
	Revision   string
	Repo       string
	SHA        string
	Ref        string
	PR         *int
	StartedAt  time.Time
	UploadedAt time.Time
	Records    int
	Score      Score
	BaselineID string
	Flags      []runfile.Diff
	// DeltaBase is the run the score's change was measured against after
	// upload (the baseline), and DeltaLo, DeltaHi the 95% interval of
	// that change by paired bootstrap (SetDelta); DeltaBase is "" until
	// then, or when none was.
	DeltaBase        string
	DeltaLo, DeltaHi float64
	// Delta is that change's estimate, paired over the records both runs
	// hold: a partial run's only change the pages show.
	Delta float64
	// Partial is runfile.Coverage's label of a run that stopped short of
	// its set ("50 of 400, sequential"), "" for a whole run; such a run
	// is never a baseline.
	Partial string
	// Sequential is the server's replay of a sequential run's stop from
	// its records against its baseline's (compare.ReplaySequential), what
	// pages show instead of the header's claim; nil for other runs, and
	// for sequential runs stored before the server replayed them.
	Sequential *compare.Sequential
	Header     runfile.Header
	Summary    json.RawMessage
	// Invalid says why a stored run cannot be scored (a row stored before
	// uploads were checked); its Score is then zero. Empty for every run
	// stored now.
	Invalid string
}

// Flagged reports whether the run's judged settings differ from its baseline's.
func (r *Run) Flagged() bool { return len(r.Flags) > 0 }

// PutOptions say how to pick the baseline whose settings a new run is
// checked against.
type PutOptions struct {
	BaseRef    string // newest run of the same repository, model and test on this ref; runfile.DefaultBaseRef if empty
	BaselineID string // or exactly this run, which must be of the same repository
}

// PutResult is what storing a run did.
type PutResult struct {
	Run     Run
	Created bool // false when the same run was already stored
}

// BadBaselineError says the baseline named in an upload cannot serve.
type BadBaselineError struct{ Msg string }

func (e *BadBaselineError) Error() string { return e.Msg }

// encoded is a run turned into the rows it is stored as, prepared outside
// the write transaction so the lock is held only for the inserts.
type encoded struct {
	header  []byte
	records [][]byte
	ids     []string
	summary []byte
	score   Score
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
	e.score = compare.ScoreRun(r)
	if !isFinite(e.score) {
		return nil, invalidf("run %s: its score %v [%v, %v] is not a finite number", r.Header.ID, e.score.Value, e.score.Lo, e.score.Hi)
	}
	return e, nil
}

// PutRun stores a whole run in one transaction, or nothing. Storing the
// same run again (same id, same content) is a no-op that returns the stored
// run; another run under a stored id is ErrConflict.
func (s *Store) PutRun(ctx context.Context, r *runfile.Run, opt PutOptions) (PutResult, error) {
	if err := s.CheckRun(r); err != nil {
		return PutResult{}, err
	}
	if opt.BaseRef == "" {
		opt.BaseRef = runfile.DefaultBaseRef
	}
	e, err := encode(r)
	if err != nil {
		return PutResult{}, fmt.Errorf("store run %s: %w", r.Header.ID, err)
	}
	started, err := unixNanos(r.Header.StartedAt)
	if err != nil {
		return PutResult{}, err
	}
	h := &r.Header
	partial := runfile.CoverageOf(r).String()
	var seq sql.NullString
	if h.Sequential != nil {
		rep, err := s.replaySequential(ctx, r)
		if err != nil {
			return PutResult{}, err
		}
		b, err := json.Marshal(rep)
		if err != nil {
			return PutResult{}, fmt.Errorf("store run %s: its sequential replay: %w", h.ID, err)
		}
		seq = sql.NullString{String: string(b), Valid: true}
		if opt.BaselineID == "" {
			// Its settings are checked against the run it was decided
			// against, and its change is measured from it.
			opt.BaselineID = h.Sequential.Baseline
		}
	}
	var res PutResult
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var sum string
		err := tx.QueryRowContext(ctx, `SELECT content_sha256 FROM runs WHERE id = ?`, h.ID).Scan(&sum)
		switch {
		case err == nil && sum == e.sum:
			return res.readBack(ctx, tx, h.ID) // already stored whole
		case err == nil:
			return fmt.Errorf("run %s: %w: another run with this id is stored", h.ID, ErrConflict)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		base, err := pickBaseline(ctx, tx, r, opt)
		if err != nil {
			return err
		}
		flags := []runfile.Diff{}
		baseID := sql.NullString{}
		if base != nil {
			flags = append(flags, runfile.Mismatch(*base, r.Header)...)
			baseID = sql.NullString{String: base.ID, Valid: true}
		}
		flagJSON, err := json.Marshal(flags)
		if err != nil {
			return err
		}
		var pr sql.NullInt64
		if h.Git.PR != nil {
			pr = sql.NullInt64{Int64: int64(*h.Git.PR), Valid: true}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO runs (id, test, model, revision, repo, sha, ref, pr,
			started_at, uploaded_at, n_records, metric, score, ci_lo, ci_hi, baseline_id, flags,
			smoke, header, summary, content_sha256, partial, sequential) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
			h.ID, h.Test, h.Model.Name, h.Model.Revision, h.Git.Repo, h.Git.SHA, h.Git.Ref, pr,
			started, s.now().UnixNano(), len(e.records), e.score.Metric, e.score.Value,
			e.score.Lo, e.score.Hi, baseID, string(flagJSON), h.Dataset.Smoke, string(e.header), string(e.summary), e.sum,
			partial, seq)
		if err != nil {
			return err
		}
		if err := insertRecords(ctx, tx, h.ID, e); err != nil {
			return err
		}
		if err := bumpGeneration(ctx, tx); err != nil {
			return err
		}
		res.Created = true
		return res.readBack(ctx, tx, h.ID)
	})
	if err != nil {
		var bb *BadBaselineError
		var inv *InvalidError
		if errors.Is(err, ErrConflict) || errors.As(err, &bb) || errors.As(err, &inv) {
			return PutResult{}, err
		}
		return PutResult{}, fmt.Errorf("store run %s: %w", h.ID, asFull(err))
	}
	return res, nil
}

// SetDelta stores the change from a run's baseline to it (paired over
// the records both hold) and its interval, if baseID is still its
// baseline and no interval is stored yet.
func (s *Store) SetDelta(ctx context.Context, id, baseID string, delta, lo, hi float64) error {
	for _, v := range []float64{delta, lo, hi} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("run %s: change %v [%v, %v] is not finite", id, delta, lo, hi)
		}
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET delta_base = ?, delta = ?, delta_lo = ?, delta_hi = ?
			WHERE id = ? AND baseline_id = ? AND delta_base IS NULL`, baseID, delta, lo, hi, id, baseID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		return bumpGeneration(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("run %s: store its change's interval: %w", id, asFull(err))
	}
	return nil
}

// bumpGeneration marks, inside a write, that what is stored changed.
func bumpGeneration(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE store_generation SET n = n + 1`)
	return err
}

// readBack reads the stored row inside the write transaction and checks it
// is what every page will serve, so a run that cannot be shown is rolled
// back rather than acknowledged.
func (res *PutResult) readBack(ctx context.Context, tx *sql.Tx, id string) error {
	run, err := getRun(ctx, tx, id)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	if run.Invalid != "" {
		return invalidf("run %s as stored: %s", id, run.Invalid)
	}
	res.Run = *run
	return nil
}

// recordBatch rows go in one INSERT: far fewer statements for a 2,000-item
// run, and well under SQLite's limit of 32,766 bound variables.
const recordBatch = 200

func insertRecords(ctx context.Context, tx *sql.Tx, id string, e *encoded) error {
	var full *sql.Stmt
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	for start := 0; start < len(e.records); start += recordBatch {
		end := min(start+recordBatch, len(e.records))
		n := end - start
		args := make([]any, 0, 4*n)
		for i := start; i < end; i++ {
			args = append(args, id, i, e.ids[i], string(e.records[i]))
		}
		if n == recordBatch && full == nil {
			var err error
			if full, err = tx.PrepareContext(ctx, insertRecordsSQL(n)); err != nil {
				return err
			}
		}
		var err error
		if n == recordBatch {
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, insertRecordsSQL(n), args...)
		}
		if err != nil {
			return fmt.Errorf("insert records %d-%d: %w", start, end-1, err)
		}
	}
	return nil
}

func insertRecordsSQL(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO records (run_id, idx, rec_id, data) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?)")
	}
	return b.String()
}

const (
	baseColumns = `id, test, model, revision, repo, sha, ref, pr, started_at, uploaded_at, n_records,
	metric, score, ci_lo, ci_hi, baseline_id, flags, delta_base, delta_lo, delta_hi, delta, partial, sequential`
	runColumns = baseColumns + `, header, summary`
	// briefColumns leave out the header and summary, the bulk of a row,
	// for lists that show neither (the history page of 1,000 runs); of
	// the header they keep only whether the run scored the smoke sample.
	briefColumns = baseColumns + `, CASE WHEN smoke THEN '{"dataset":{"smoke":true}}' ELSE '' END, 'null'`
)

// unixNanos is t as stored. Every stored time is inside the window
// runfile.CheckStarted allows, far inside int64 nanoseconds; a time outside
// int64's range is refused here, never wrapped.
func unixNanos(t time.Time) (int64, error) {
	if t.Before(minNanosTime) || t.After(maxNanosTime) {
		return 0, invalidf("time %s is outside the years 1678 to 2262 that can be stored", t.UTC().Format(time.RFC3339))
	}
	return t.UnixNano(), nil
}

// clampNanos is a query bound as stored: times beyond int64 nanoseconds
// become its ends, which select the same rows.
func clampNanos(t time.Time) int64 {
	switch {
	case t.Before(minNanosTime):
		return math.MinInt64
	case t.After(maxNanosTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minNanosTime = time.Unix(0, math.MinInt64)
	maxNanosTime = time.Unix(0, math.MaxInt64)
)

type scanner interface{ Scan(...any) error }

func scanRun(sc scanner) (*Run, error) {
	var r Run
	var pr sql.NullInt64
	var started, uploaded int64
	var baseID, dBase sql.NullString
	var dLo, dHi, delta sql.NullFloat64
	var partial, seq sql.NullString
	var flags, header, summary string
	err := sc.Scan(&r.ID, &r.Test, &r.Model, &r.Revision, &r.Repo, &r.SHA, &r.Ref, &pr, &started, &uploaded,
		&r.Records, &r.Score.Metric, &r.Score.Value, &r.Score.Lo, &r.Score.Hi, &baseID, &flags, &dBase, &dLo, &dHi,
		&delta, &partial, &seq, &header, &summary)
	if err != nil {
		return nil, err
	}
	if dBase.Valid && dLo.Valid && dHi.Valid {
		r.DeltaBase, r.DeltaLo, r.DeltaHi, r.Delta = dBase.String, dLo.Float64, dHi.Float64, delta.Float64
	}
	r.Partial = partial.String
	if !partial.Valid {
		r.Partial = notJudged
	}
	if seq.Valid {
		if err := json.Unmarshal([]byte(seq.String), &r.Sequential); err != nil {
			return nil, fmt.Errorf("run %s sequential replay: %w", r.ID, err)
		}
	}
	if pr.Valid {
		n := int(pr.Int64)
		r.PR = &n
	}
	if !isFinite(r.Score) {
		// A row stored before uploads were checked: shown, flagged, never
		// a baseline, and its numbers zeroed so JSON can carry it.
		r.Invalid = fmt.Sprintf("its stored score %v [%v, %v] is not a finite number", r.Score.Value, r.Score.Lo, r.Score.Hi)
		r.Score.Value, r.Score.Lo, r.Score.Hi = 0, 0, 0
	}
	r.StartedAt = time.Unix(0, started).UTC()
	r.UploadedAt = time.Unix(0, uploaded).UTC()
	r.BaselineID = baseID.String
	if err := json.Unmarshal([]byte(flags), &r.Flags); err != nil {
		return nil, fmt.Errorf("run %s flags: %w", r.ID, err)
	}
	if header != "" {
		if err := json.Unmarshal([]byte(header), &r.Header); err != nil {
			return nil, fmt.Errorf("run %s header: %w", r.ID, err)
		}
	}
	r.Summary = json.RawMessage(summary)
	return &r, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

func getRun(ctx context.Context, q querier, id string) (*Run, error) {
	r, err := scanRun(q.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return r, err
}

// GetRun returns one run without its records.
func (s *Store) GetRun(ctx context.Context, id string) (*Run, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	return getRun(ctx, s.r, id)
}

// WriteRunFile writes the stored run as a run file (header line, then one
// line per record in the uploaded order), which runfile.Read reads back.
func (s *Store) WriteRunFile(ctx context.Context, id string, w interface{ Write([]byte) (int, error) }) error {
	if err := ValidID(id); err != nil {
		return err
	}
	// One read transaction, so the header and records are one snapshot.
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	defer tx.Rollback()
	var header string
	err = tx.QueryRowContext(ctx, `SELECT header FROM runs WHERE id = ?`, id).Scan(&header)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT data FROM records WHERE run_id = ? ORDER BY idx`, id)
	if err != nil {
		return fmt.Errorf("run %s records: %w", id, err)
	}
	defer rows.Close()
	var buf bytes.Buffer
	buf.WriteString(header)
	buf.WriteByte('\n')
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return fmt.Errorf("run %s records: %w", id, err)
		}
		buf.Write(data)
		buf.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("run %s records: %w", id, err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// LoadRun returns a stored run with its records.
func (s *Store) LoadRun(ctx context.Context, id string) (*runfile.Run, error) {
	var buf bytes.Buffer
	if err := s.WriteRunFile(ctx, id, &buf); err != nil {
		return nil, err
	}
	r, err := runfile.Read(&buf, "stored run "+id)
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w: %v", id, ErrUnreadable, err)
	}
	return r, nil
}

// Filter selects runs of one model of one repository.
type Filter struct {
	Ref    string    // only this ref, if set
	Test   string    // only this test, if set
	Since  time.Time // started at or after, if set
	Limit  int       // at most this many (newest first); 0 means no limit
	Cursor string    // continue after this cursor (from a previous page)
	Brief  bool      // leave Header (but its dataset.smoke) and Summary empty
}

// Page is one page of runs, newest first.
type Page struct {
	Runs []Run
	Next string // empty on the last page
}

// cursor encodes the sort key of the last run on a page.
func cursor(r *Run) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(r.StartedAt.UnixNano(), 10) + " " + r.ID))
}

func parseCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		ns, id, ok := strings.Cut(string(b), " ")
		if ok {
			t, err := strconv.ParseInt(ns, 10, 64)
			if err == nil && ValidID(id) == nil {
				return t, id, nil
			}
		}
	}
	return 0, "", invalidf("cursor %q is not one this server gave", c)
}

// validRepoOrNone is ValidRepo, or the empty repository of runs whose
// header named none (see migration 0002).
func validRepoOrNone(repo string) error {
	if repo == "" {
		return nil
	}
	return ValidRepo(repo)
}

// ModelRuns lists the runs of a repository's model, newest first.
func (s *Store) ModelRuns(ctx context.Context, repo, model string, f Filter) (Page, error) {
	for _, err := range []error{validRepoOrNone(repo), ValidModel(model)} {
		if err != nil {
			return Page{}, err
		}
	}
	cols := runColumns
	if f.Brief {
		cols = briefColumns
	}
	q := `SELECT ` + cols + ` FROM runs WHERE repo = ? AND model = ?`
	args := []any{repo, model}
	if f.Ref != "" {
		q += ` AND ref = ?`
		args = append(args, f.Ref)
	}
	if f.Test != "" {
		q += ` AND test = ?`
		args = append(args, f.Test)
	}
	if !f.Since.IsZero() {
		q += ` AND started_at >= ?`
		args = append(args, clampNanos(f.Since))
	}
	if f.Cursor != "" {
		ns, id, err := parseCursor(f.Cursor)
		if err != nil {
			return Page{}, err
		}
		q += ` AND (started_at < ? OR (started_at = ? AND id < ?))`
		args = append(args, ns, ns, id)
	}
	q += ` ORDER BY started_at DESC, id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit+1) // one more tells whether a next page exists
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return Page{}, fmt.Errorf("runs of %s: %w", model, err)
	}
	defer rows.Close()
	p := Page{Runs: []Run{}}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return Page{}, fmt.Errorf("runs of %s: %w", model, err)
		}
		p.Runs = append(p.Runs, *r)
	}
	if err := rows.Err(); err != nil {
		return Page{}, fmt.Errorf("runs of %s: %w", model, err)
	}
	if f.Limit > 0 && len(p.Runs) > f.Limit {
		p.Runs = p.Runs[:f.Limit]
		p.Next = cursor(&p.Runs[f.Limit-1])
	}
	return p, nil
}

// ModelRepos lists the repositories that have runs of a model, for routes
// that name only the model.
func (s *Store) ModelRepos(ctx context.Context, model string) ([]string, error) {
	if err := ValidModel(model); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT repo FROM runs WHERE model = ? ORDER BY repo`, model)
	if err != nil {
		return nil, fmt.Errorf("repositories of %s: %w", model, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, fmt.Errorf("repositories of %s: %w", model, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ModelTest is one repository's model's runs of one test, for the index page.
type ModelTest struct {
	Repo   string
	Model  string
	Test   string
	Runs   int
	Latest Run
	Recent []float64 // scores of the newest base-ref runs, oldest first, for the trend line
}

// Models lists every repository's models and tests with the latest run and
// the scores of up to recent runs on baseRef (none when recent is 0); only
// repo's when repo is not empty. Brief leaves the latest run's Header (but
// its dataset.smoke) and Summary empty. Three queries whatever the number
// of models: the index page of 2,000 runs once made two per model.
func (s *Store) Models(ctx context.Context, repo, baseRef string, recent int, brief bool) ([]ModelTest, error) {
	where, args := "", []any{}
	if repo != "" {
		where, args = ` WHERE repo = ?`, append(args, repo)
	}
	cols := runColumns
	if brief {
		cols = briefColumns
	}
	// The newest run of each (repo, model, test) and how many it has.
	rows, err := s.r.QueryContext(ctx, `SELECT n, `+cols+` FROM runs JOIN (
		SELECT id AS newest, n FROM (SELECT id, COUNT(*) OVER w AS n,
			ROW_NUMBER() OVER (w ORDER BY started_at DESC, id DESC) AS rn
			FROM runs`+where+` WINDOW w AS (PARTITION BY repo, model, test)) WHERE rn = 1
	) ON id = newest ORDER BY model, repo, test`, args...)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	var out []ModelTest
	idx := map[[3]string]int{}
	for rows.Next() {
		var n int
		r, err := scanRun(prefixed{rows, &n})
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("models: %w", err)
		}
		idx[[3]string{r.Repo, r.Model, r.Test}] = len(out)
		out = append(out, ModelTest{Repo: r.Repo, Model: r.Model, Test: r.Test, Runs: n, Latest: *r})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	if recent <= 0 {
		return out, nil
	}
	// The scores of the newest runs on the base ref, newest first.
	where = ` WHERE ref = ?`
	args = []any{baseRef}
	if repo != "" {
		where, args = where+` AND repo = ?`, append(args, repo)
	}
	rows, err = s.r.QueryContext(ctx, `SELECT repo, model, test, score FROM (SELECT repo, model, test, score,
		ROW_NUMBER() OVER (PARTITION BY repo, model, test ORDER BY started_at DESC, id DESC) AS rn
		FROM runs`+where+`) WHERE rn <= ? ORDER BY rn DESC`, append(args, recent)...)
	if err != nil {
		return nil, fmt.Errorf("models: recent scores: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k [3]string
		var v float64
		if err := rows.Scan(&k[0], &k[1], &k[2], &v); err != nil {
			return nil, fmt.Errorf("models: recent scores: %w", err)
		}
		if i, ok := idx[k]; ok {
			out[i].Recent = append(out[i].Recent, v)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("models: recent scores: %w", err)
	}
	return out, nil
}

// prefixed scans one leading column into n, then the rest as sc would.
type prefixed struct {
	sc scanner
	n  *int
}

func (p prefixed) Scan(dest ...any) error { return p.sc.Scan(append([]any{p.n}, dest...)...) }

// Counts returns the number of runs and records stored (for tests and health).
func (s *Store) Counts(ctx context.Context) (runs, records int, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM records)`).Scan(&runs, &records)
	return runs, records, err
}
