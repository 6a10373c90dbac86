package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"
)

// Anchor is the run pinned as a repository's model's anchor for one test.
type Anchor struct {
	Repo, Model, Test string
	RunID             string
	// MaxDrift is the drift budget pinned with it, in the test's unit; nil
	// (or 0) for none.
	MaxDrift *float64
	PinnedAt time.Time
	TokenID  int64
}

// AnchorDelta is a run's change since an anchor and its 95% interval.
type AnchorDelta struct {
	AnchorID      string
	Delta, Lo, Hi float64
}

// PinAnchor pins run id as its model's anchor for its test, replacing the
// one pinned before. tok must upload for the run's repository (another
// repository's run is reported as absent), and the run must be one that
// can be a baseline (baselineRule): a partial run is no release.
func (s *Store) PinAnchor(ctx context.Context, id string, tok Token, maxDrift *float64) (Anchor, error) {
	if err := ValidID(id); err != nil {
		return Anchor{}, err
	}
	if maxDrift != nil && (math.IsNaN(*maxDrift) || math.IsInf(*maxDrift, 0) || *maxDrift < 0) {
		return Anchor{}, invalidf("drift budget %v: want a number >= 0", *maxDrift)
	}
	a := Anchor{RunID: id, MaxDrift: maxDrift, PinnedAt: s.now().UTC(), TokenID: tok.ID}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var ok bool
		err := tx.QueryRowContext(ctx, `SELECT repo, model, test, `+baselineRule+` FROM runs WHERE id = ?`, id).Scan(&a.Repo, &a.Model, &a.Test, &ok)
		switch {
		case errors.Is(err, sql.ErrNoRows) || err == nil && a.Repo != tok.Repo:
			return fmt.Errorf("run %s is not stored for %s: %w", id, tok.Repo, ErrNotFound)
		case err != nil:
			return err
		case !ok:
			return invalidf("run %s cannot be an anchor: it is partial, or its score is not a number", id)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO anchors (repo, model, test, run_id, max_drift, pinned_at, token_id)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (repo, model, test) DO UPDATE SET run_id = excluded.run_id, max_drift = excluded.max_drift,
			pinned_at = excluded.pinned_at, token_id = excluded.token_id`,
			a.Repo, a.Model, a.Test, id, nullFloat(maxDrift), a.PinnedAt.UnixNano(), tok.ID); err != nil {
			return err
		}
		return bumpGeneration(ctx, tx)
	})
	if err != nil {
		return Anchor{}, fmt.Errorf("pin run %s as the anchor: %w", id, asFull(err))
	}
	return a, nil
}

func nullFloat(v *float64) sql.NullFloat64 {
	if v == nil {
		return sql.NullFloat64{}
	}
	return sql.NullFloat64{Float64: *v, Valid: true}
}

// AnchorOf returns the anchor of a repository's model and test, an error
// wrapping ErrNotFound when none is pinned.
func (s *Store) AnchorOf(ctx context.Context, repo, model, test string) (Anchor, error) {
	for _, err := range []error{ValidRepo(repo), ValidModel(model), ValidTest(test)} {
		if err != nil {
			return Anchor{}, err
		}
	}
	a := Anchor{Repo: repo, Model: model, Test: test}
	var drift sql.NullFloat64
	var pinned int64
	err := s.r.QueryRowContext(ctx, `SELECT run_id, max_drift, pinned_at, token_id FROM anchors WHERE repo = ? AND model = ? AND test = ?`,
		repo, model, test).Scan(&a.RunID, &drift, &pinned, &a.TokenID)
	if errors.Is(err, sql.ErrNoRows) {
		return Anchor{}, fmt.Errorf("no %s run of %s in %s is pinned as the anchor: %w", test, model, repo, ErrNotFound)
	}
	if err != nil {
		return Anchor{}, fmt.Errorf("anchor of %s in %s: %w", model, repo, err)
	}
	if drift.Valid {
		a.MaxDrift = &drift.Float64
	}
	a.PinnedAt = time.Unix(0, pinned).UTC()
	return a, nil
}

// SetAnchorDelta stores a run's change since an anchor and its interval.
func (s *Store) SetAnchorDelta(ctx context.Context, id, anchorID string, delta, lo, hi float64) error {
	for _, v := range []float64{delta, lo, hi} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("run %s: change since anchor %s %v [%v, %v] is not finite", id, anchorID, delta, lo, hi)
		}
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO anchor_deltas (run_id, anchor_id, delta, lo, hi) VALUES (?, ?, ?, ?, ?)`,
			id, anchorID, delta, lo, hi); err != nil {
			return err
		}
		return bumpGeneration(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("run %s: store its change since anchor %s: %w", id, anchorID, asFull(err))
	}
	return nil
}

// AnchorDeltas returns, by run id, the change since the anchor now pinned
// of every run of a repository's model and test that has one.
func (s *Store) AnchorDeltas(ctx context.Context, repo, model, test string) (Anchor, map[string]AnchorDelta, error) {
	a, err := s.AnchorOf(ctx, repo, model, test)
	if err != nil {
		return Anchor{}, nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT run_id, delta, lo, hi FROM anchor_deltas WHERE anchor_id = ?`, a.RunID)
	if err != nil {
		return a, nil, fmt.Errorf("changes since anchor %s: %w", a.RunID, err)
	}
	defer rows.Close()
	out := map[string]AnchorDelta{}
	for rows.Next() {
		var id string
		d := AnchorDelta{AnchorID: a.RunID}
		if err := rows.Scan(&id, &d.Delta, &d.Lo, &d.Hi); err != nil {
			return a, nil, fmt.Errorf("changes since anchor %s: %w", a.RunID, err)
		}
		out[id] = d
	}
	return a, out, rows.Err()
}
