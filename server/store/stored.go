package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Stored returns the run stored under c's id when it is c (the same
// content), nil when no run is, and ErrConflict when another is: so a
// repeated upload is recognised before anything is recomputed for it.
func (s *Store) Stored(ctx context.Context, c *CheckedRun) (*Run, error) {
	var res PutResult
	found, err := res.storedAs(ctx, s.r, c.run.Header.ID, c.enc.sum)
	switch {
	case errors.Is(err, ErrConflict):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("look up run %s: %w", c.run.Header.ID, err)
	case !found:
		return nil, nil
	}
	return &res.Run, nil
}

// storedAs reads back the run stored under id when its content is sum;
// another run under id is ErrConflict.
func (res *PutResult) storedAs(ctx context.Context, q querier, id, sum string) (bool, error) {
	var got string
	err := q.QueryRowContext(ctx, `SELECT content_sha256 FROM runs WHERE id = ?`, id).Scan(&got)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	case got != sum:
		return false, fmt.Errorf("run %s: %w: another run with this id is stored", id, ErrConflict)
	}
	return true, res.readBack(ctx, q, id)
}
