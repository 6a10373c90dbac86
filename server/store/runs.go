package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

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
	// its records against its baseline's (compare.ReplaySequential) as JSON,
	// what pages show instead of the header's claim; nil for other runs,
	// and for sequential runs stored before the server replayed them.
	Sequential json.RawMessage
	Header     runfile.Header
	Summary    json.RawMessage
	// Invalid says why a stored run cannot be scored (a row stored before
	// uploads were checked); its Score is then zero. Empty for every run
	// stored now.
	Invalid string
}

// Flagged reports whether the run's judged settings differ from its baseline's.
func (r *Run) Flagged() bool { return len(r.Flags) > 0 }

const (
	baseColumns = `id, test, model, revision, repo, sha, ref, pr, started_at, uploaded_at, n_records,
	metric, score, ci_lo, ci_hi, baseline_id, flags, delta_base, delta_lo, delta_hi, delta, partial, sequential`
	runColumns = baseColumns + `, header, summary`
	// briefColumns leave out the header and summary, the bulk of a row,
	// for lists that show neither (the history page of 1,000 runs); of
	// the header they keep only whether the run scored the smoke sample.
	briefColumns = baseColumns + `, CASE WHEN smoke THEN '{"dataset":{"smoke":true}}' ELSE '' END, 'null'`
)

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
		r.Sequential = json.RawMessage(seq.String)
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
