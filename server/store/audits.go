package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// NewAudit is an artifact audit to store: its report, checked by the
// caller (the server decodes it with package audit), and what it is filed
// under.
type NewAudit struct {
	Model    string
	Revision string
	Git      runfile.Git
	Artifact string // how the pages name the artifact
	Verdict  string // pass or fail
	Report   []byte // canonical JSON
}

// Audit is one stored audit: a row, not the wire format (the server sends
// client.Audit).
type Audit struct {
	ID         string
	Repo       string
	Model      string
	Revision   string
	SHA        string
	Ref        string
	PR         *int
	Artifact   string
	Verdict    string
	UploadedAt time.Time
	Report     json.RawMessage // empty in lists that leave it out
}

// AuditIDOf is the id of an audit report: derived from its bytes, so the
// same report uploaded twice is stored once.
func AuditIDOf(report []byte) string {
	sum := sha256.Sum256(report)
	return "audit-" + hex.EncodeToString(sum[:10])
}

// PutAudit stores an audit, or finds it stored already (created false).
func (s *Store) PutAudit(ctx context.Context, a NewAudit) (Audit, bool, error) {
	if err := checkIdentity("audit", a.Model, a.Revision, a.Git); err != nil {
		return Audit{}, false, err
	}
	if a.Verdict != "pass" && a.Verdict != "fail" {
		return Audit{}, false, invalidf("audit: verdict %q: want pass or fail", a.Verdict)
	}
	if !json.Valid(a.Report) {
		return Audit{}, false, invalidf("audit: the report is not JSON")
	}
	id := AuditIDOf(a.Report)
	var out Audit
	created := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		got, err := getAudit(ctx, tx, id)
		switch {
		case err == nil:
			out = *got
			return nil
		case !errors.Is(err, ErrNotFound):
			return err
		}
		var pr sql.NullInt64
		if a.Git.PR != nil {
			pr = sql.NullInt64{Int64: int64(*a.Git.PR), Valid: true}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO audits (id, repo, model, revision, sha, ref, pr, artifact, verdict, uploaded_at, report)
			VALUES (?,?,?,?,?,?,?,?,?,?,?)`, id, a.Git.Repo, a.Model, a.Revision, a.Git.SHA, a.Git.Ref, pr,
			a.Artifact, a.Verdict, s.now().UnixNano(), string(a.Report))
		if err != nil {
			return err
		}
		if err := bumpGeneration(ctx, tx); err != nil {
			return err
		}
		got, err = getAudit(ctx, tx, id)
		if err != nil {
			return fmt.Errorf("read back: %w", err)
		}
		out, created = *got, true
		return nil
	})
	if err != nil {
		return Audit{}, false, fmt.Errorf("store audit %s: %w", id, asFull(err))
	}
	return out, created, nil
}

const auditColumns = `id, repo, model, revision, sha, ref, pr, artifact, verdict, uploaded_at`

func scanAudit(sc interface{ Scan(...any) error }, withReport bool) (*Audit, error) {
	var a Audit
	var pr sql.NullInt64
	var up int64
	var rep string
	dest := []any{&a.ID, &a.Repo, &a.Model, &a.Revision, &a.SHA, &a.Ref, &pr, &a.Artifact, &a.Verdict, &up}
	if withReport {
		dest = append(dest, &rep)
	}
	if err := sc.Scan(dest...); err != nil {
		return nil, err
	}
	if pr.Valid {
		n := int(pr.Int64)
		a.PR = &n
	}
	a.UploadedAt = time.Unix(0, up).UTC()
	if withReport {
		a.Report = json.RawMessage(rep)
	}
	return &a, nil
}

func getAudit(ctx context.Context, q querier, id string) (*Audit, error) {
	a, err := scanAudit(q.QueryRowContext(ctx, `SELECT `+auditColumns+`, report FROM audits WHERE id = ?`, id), true)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("audit %s: %w", id, ErrNotFound)
	}
	return a, err
}

// GetAudit reads one audit with its report.
func (s *Store) GetAudit(ctx context.Context, id string) (*Audit, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	return getAudit(ctx, s.r, id)
}

// maxAuditsListed bounds the audits a page lists.
const maxAuditsListed = 50

// CommitAudits are the audits of a repository's model at one revision and
// commit, newest first, with their reports: what a run's page shows.
func (s *Store) CommitAudits(ctx context.Context, repo, model, revision, sha string) ([]Audit, error) {
	return s.audits(ctx, true, `WHERE repo = ? AND model = ? AND revision = ? AND sha = ?`, repo, model, revision, sha)
}

// ModelAudits are the newest audits of a repository's model, without
// their reports: what the model's page lists.
func (s *Store) ModelAudits(ctx context.Context, repo, model string) ([]Audit, error) {
	return s.audits(ctx, false, `WHERE repo = ? AND model = ?`, repo, model)
}

func (s *Store) audits(ctx context.Context, withReport bool, where string, args ...any) ([]Audit, error) {
	cols := auditColumns
	if withReport {
		cols += ", report"
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+cols+` FROM audits `+where+
		fmt.Sprintf(` ORDER BY uploaded_at DESC, id DESC LIMIT %d`, maxAuditsListed), args...)
	if err != nil {
		return nil, fmt.Errorf("list audits: %w", err)
	}
	defer rows.Close()
	var out []Audit
	for rows.Next() {
		a, err := scanAudit(rows, withReport)
		if err != nil {
			return nil, fmt.Errorf("list audits: %w", err)
		}
		out = append(out, *a)
	}
	return out, rows.Err()
}

// CommitRunIDs are the ids of the runs of a repository's model at one
// revision and commit, oldest first: the runs an audit of that commit is
// shown beside.
func (s *Store) CommitRunIDs(ctx context.Context, repo, model, revision, sha string) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM runs WHERE repo = ? AND model = ? AND revision = ? AND sha = ?
		ORDER BY started_at, id LIMIT ?`, repo, model, revision, sha, maxAuditsListed)
	if err != nil {
		return nil, fmt.Errorf("runs of %s at %s: %w", model, sha, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// ModelFileRuns lists the newest stored runs (at most 5) of a repository's
// model and test scored from the model file with the given sha256: what
// an audit's reference must agree with.
func (s *Store) ModelFileRuns(ctx context.Context, repo, model, test, sha string) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM runs WHERE repo = ? AND model = ? AND test = ?
		AND json_valid(header) AND json_extract(header, '$.model.sha256') = ?
		ORDER BY started_at DESC, id DESC LIMIT 5`, repo, model, test, sha)
	if err != nil {
		return nil, fmt.Errorf("runs of model file %s: %w", sha, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("runs of model file %s: %w", sha, err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
