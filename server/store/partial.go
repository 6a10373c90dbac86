package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// notJudged is a row's partial label before the store judged it (stored
// before migration 0005 and not yet read back): never a baseline.
const notJudged = "not yet judged"

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
