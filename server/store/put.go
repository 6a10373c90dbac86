package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/udgamlabs/udgam-ci/runfile"
)

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

// NewRun is a judged upload, the row the server hands the store: the run
// as CheckRun accepted it and what the server computed from it once.
type NewRun struct {
	Checked *CheckedRun
	Score   Score
	// Partial is runfile.Coverage's label, "" for a whole run.
	Partial string
	// Sequential is the replay of a sequential run's stop as JSON, nil
	// for other runs.
	Sequential json.RawMessage
}

// PutRun stores a judged run in one transaction, or nothing. Storing the
// same run again (same id, same content) is a no-op that returns the stored
// run; another run under a stored id is ErrConflict.
func (s *Store) PutRun(ctx context.Context, n NewRun) (PutResult, error) {
	if n.Checked == nil {
		return PutResult{}, errors.New("store run: not checked (Store.CheckRun)")
	}
	r, e, opt := n.Checked.run, n.Checked.enc, n.Checked.opt
	h := &r.Header
	if !isFinite(n.Score) {
		return PutResult{}, invalidf("run %s: its score %v [%v, %v] is not a finite number", h.ID, n.Score.Value, n.Score.Lo, n.Score.Hi)
	}
	var seq sql.NullString
	if n.Sequential != nil {
		seq = sql.NullString{String: string(n.Sequential), Valid: true}
	}
	var res PutResult
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// Checked again inside the write: an upload of the same run may
		// have been stored since the server's first look (Stored).
		if found, err := res.storedAs(ctx, tx, h.ID, e.sum); found || err != nil {
			return err
		}
		base, err := pickBaseline(ctx, tx, r, opt, n.Checked.started)
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
			n.Checked.started, s.now().UnixNano(), len(e.records), n.Score.Metric, n.Score.Value,
			n.Score.Lo, n.Score.Hi, baseID, string(flagJSON), h.Dataset.Smoke, string(e.header), string(e.summary), e.sum,
			n.Partial, seq)
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

// readBack reads the stored row inside the write transaction and checks it
// is what every page will serve, so a run that cannot be shown is rolled
// back rather than acknowledged.
func (res *PutResult) readBack(ctx context.Context, q querier, id string) error {
	run, err := getRun(ctx, q, id)
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
