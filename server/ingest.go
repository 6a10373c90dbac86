package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// Ingest checks, judges and stores an uploaded run: what the upload
// handler does past its HTTP concerns, for callers that hold a store.
func Ingest(ctx context.Context, st *store.Store, r *runfile.Run, opt store.PutOptions) (store.PutResult, error) {
	c, err := checkRun(st, r, opt)
	if err != nil {
		return store.PutResult{}, err
	}
	return ingest(ctx, st, c)
}

// checkRun is every check of an uploaded run, run files of audits
// included: the store's (what it can keep, and the baseline opt asks
// for) and the test's (variants).
func checkRun(st *store.Store, r *runfile.Run, opt store.PutOptions) (*store.CheckedRun, error) {
	c, err := st.CheckRun(r, opt)
	if err != nil {
		return nil, err
	}
	if err := probes.CheckVariants(r); err != nil {
		return nil, &store.InvalidError{Msg: fmt.Sprintf("run %s: %v", r.Header.ID, err)}
	}
	return c, nil
}

// ingest judges a checked run once (its score, its coverage, a
// sequential run's replayed stop) and hands the store the judged row. A
// run stored already is answered as stored before anything is replayed.
func ingest(ctx context.Context, st *store.Store, c *store.CheckedRun) (store.PutResult, error) {
	r := c.Run()
	stored, err := st.Stored(ctx, c)
	if err != nil {
		return store.PutResult{}, err
	}
	if stored != nil {
		return store.PutResult{Run: *stored}, nil
	}
	n := store.NewRun{Checked: c, Score: store.Score(compare.ScoreRun(r)), Partial: runfile.CoverageOf(r).String()}
	if r.Header.Sequential != nil {
		rep, err := replaySequential(ctx, st, r)
		if err != nil {
			return store.PutResult{}, err
		}
		if n.Sequential, err = json.Marshal(rep); err != nil {
			return store.PutResult{}, fmt.Errorf("store run %s: its sequential replay: %w", r.Header.ID, err)
		}
	}
	return st.PutRun(ctx, n)
}

// replaySequential recomputes where the sequential run r stopped and why,
// from its records and the rule in its header against its baseline's
// stored records (the replay compare does), and refuses a header whose
// own claim differs: pages show the replay, never the claim.
func replaySequential(ctx context.Context, st *store.Store, r *runfile.Run) (*compare.Sequential, error) {
	h := &r.Header
	q := h.Sequential // its baseline's id checked by CheckRun
	base, err := st.LoadRun(ctx, q.Baseline)
	if errors.Is(err, store.ErrNotFound) || err == nil && base.Header.Git.Repo != h.Git.Repo {
		// Another repository's run is reported as absent, not named.
		return nil, invalidf("run %s was scored sequentially against run %s, which is not stored for %s: this server replays a sequential run's stop against its baseline's records, so upload the baseline first",
			h.ID, q.Baseline, h.Git.Repo)
	}
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

// replayOf decodes the stored replay of a sequential run: nil for other
// runs, and for a replay that does not decode (only this file writes
// them, so that is a damaged row, shown without its stop).
func replayOf(r *store.Run) *compare.Sequential {
	var q compare.Sequential
	if r.Sequential == nil || json.Unmarshal(r.Sequential, &q) != nil {
		return nil
	}
	return &q
}

// invalidf is an uploaded run the server refuses as the client's mistake.
func invalidf(format string, a ...any) error {
	return &store.InvalidError{Msg: fmt.Sprintf(format, a...)}
}
