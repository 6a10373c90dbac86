package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// baselineRule is the one rule a stored run passes to be a baseline,
// automatic or requested: its score is a number (rows stored before
// uploads were checked may hold an infinite one) and it scored its whole
// set (partial is runfile.Coverage's label, ” for a whole run, NULL while
// not yet judged): a sequential run, or one with fewer records than it set
// out to score, is never one.
const baselineRule = `abs(score) <= 1e308 AND abs(ci_lo) <= 1e308 AND abs(ci_hi) <= 1e308 AND partial = ''`

// pickBaseline finds the run whose settings r is checked against: the one
// named, or the newest run of the same repository, model and test on the
// base ref that started no later than r (so importing old runs flags them
// sensibly). Another repository's runs are never a baseline: a token
// uploads for its own repository, and could otherwise plant one.
func pickBaseline(ctx context.Context, tx querier, r *runfile.Run, opt PutOptions, started int64) (*runfile.Header, error) {
	h := &r.Header
	var raw string
	var err error
	if opt.BaselineID != "" { // checked by CheckRun
		var repo string
		var partial sql.NullString
		var ok bool
		err = tx.QueryRowContext(ctx, `SELECT header, repo, partial, `+baselineRule+` FROM runs WHERE id = ?`,
			opt.BaselineID).Scan(&raw, &repo, &partial, &ok)
		switch {
		case errors.Is(err, sql.ErrNoRows) || err == nil && repo != h.Git.Repo:
			// Another repository's run is reported as absent, not named.
			return nil, &BadBaselineError{Msg: fmt.Sprintf("baseline run %s is not stored for %s", opt.BaselineID, h.Git.Repo)}
		case err == nil && partial.Valid && partial.String != "":
			return nil, &BadBaselineError{Msg: fmt.Sprintf("baseline run %s is partial (%s): a baseline scored its whole set", opt.BaselineID, partial.String)}
		case err == nil && !ok:
			return nil, &BadBaselineError{Msg: fmt.Sprintf("baseline run %s cannot be a baseline: its score is not a number, or the server has not judged it whole", opt.BaselineID)}
		}
	} else {
		err = tx.QueryRowContext(ctx, `SELECT header FROM runs
			WHERE repo = ? AND model = ? AND test = ? AND ref = ? AND id != ? AND started_at <= ? AND `+baselineRule+`
			ORDER BY started_at DESC, id DESC LIMIT 1`,
			h.Git.Repo, h.Model.Name, h.Test, opt.BaseRef, h.ID, started).Scan(&raw)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	var base runfile.Header
	if err := json.Unmarshal([]byte(raw), &base); err != nil {
		return nil, fmt.Errorf("baseline header: %w", err)
	}
	if base.Test != h.Test {
		return nil, &BadBaselineError{Msg: fmt.Sprintf("baseline run %s is a %s run, this is a %s run", base.ID, base.Test, h.Test)}
	}
	return &base, nil
}

// Baseline returns the newest run of a repository's model and test on a
// ref that can be a baseline (baselineRule).
func (s *Store) Baseline(ctx context.Context, repo, model, ref, test string) (*Run, error) {
	for _, err := range []error{ValidRepo(repo), ValidModel(model), ValidRef(ref), ValidTest(test)} {
		if err != nil {
			return nil, err
		}
	}
	r, err := scanRun(s.r.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs
		WHERE repo = ? AND model = ? AND ref = ? AND test = ? AND `+baselineRule+`
		ORDER BY started_at DESC, id DESC LIMIT 1`, repo, model, ref, test))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("no %s run of %s in %s on %s that can be a baseline: %w", test, model, repo, ref, ErrNotFound)
	}
	return r, err
}
