package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// notJudged is a row's partial label before the store judged it (stored
// before migration 0005 and not yet read back): never a baseline.
const notJudged = "not yet judged"

// replaySequential recomputes where the sequential run r stopped and why,
// from its records and the rule in its header against its baseline's
// stored records (the replay compare does), and refuses a header whose
// own claim differs: pages show the replay, never the claim.
func (s *Store) replaySequential(ctx context.Context, r *runfile.Run) (*compare.Sequential, error) {
	h := &r.Header
	q := h.Sequential
	if err := ValidID(q.Baseline); err != nil {
		return nil, invalidf("run %s: sequential.baseline: %v", h.ID, err)
	}
	meta, err := s.GetRun(ctx, q.Baseline)
	if errors.Is(err, ErrNotFound) || err == nil && meta.Repo != h.Git.Repo {
		return nil, invalidf("run %s was scored sequentially against run %s, which is not stored for %s: this server replays a sequential run's stop against its baseline's records, so upload the baseline first",
			h.ID, q.Baseline, h.Git.Repo)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: its sequential baseline: %w", h.ID, err)
	}
	base, err := s.LoadRun(ctx, q.Baseline)
	if err != nil {
		return nil, fmt.Errorf("run %s: its sequential baseline: %w", h.ID, err)
	}
	rep, _, err := compare.ReplaySequential(base, r)
	if err != nil {
		return nil, invalidf("run %s: its records do not replay against its sequential baseline %s: %v", h.ID, q.Baseline, err)
	}
	if st := q.Stop; st != nil && (st.Reason != rep.Reason || st.Scored != rep.Scored || !sameInterval(st.CI, rep.CI)) {
		return nil, invalidf("run %s: its header says it stopped (%s) after %d of %d records with interval [%g, %g], but its records replayed against baseline %s stop (%s) after %d with [%g, %g]: the header's claim is refused",
			h.ID, st.Reason, st.Scored, q.Total, st.CI[0], st.CI[1], q.Baseline, rep.Reason, rep.Scored, rep.CI[0], rep.CI[1])
	}
	return rep, nil
}

// sameInterval allows the last bits a JSON round trip of the scorer's
// sums may differ in, nothing a page could show.
func sameInterval(a, b [2]float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9*max(1, math.Abs(b[i])) {
			return false
		}
	}
	return true
}

// judgeStored labels the runs stored before the store judged coverage
// (migration 0005), with the same rule as an upload: until then they are
// never a baseline.
func (s *Store) judgeStored(ctx context.Context) error {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM runs WHERE partial IS NULL`)
	if err != nil {
		return fmt.Errorf("judge stored runs: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("judge stored runs: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("judge stored runs: %w", err)
	}
	for _, id := range ids {
		label := "unreadable"
		if r, err := s.LoadRun(ctx, id); err == nil {
			label = runfile.CoverageOf(r).String()
		}
		err := s.tx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE runs SET partial = ? WHERE id = ? AND partial IS NULL`, label, id)
			return err
		})
		if err != nil {
			return fmt.Errorf("judge stored run %s: %w", id, err)
		}
	}
	return nil
}
