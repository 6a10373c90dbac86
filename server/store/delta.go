package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
)

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
