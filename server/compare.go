package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// Bounds on the work one /compare request may ask for. A comparison costs
// about resamples x records draws per group; the real tests have 1,670
// documents and 2,000 items.
const (
	DefaultMaxRecords     = 100_000
	DefaultCompareTimeout = 30 * time.Second
	maxCompareResamples   = 20_000
	compareCacheSize      = 128
)

// compareKey names a comparison: runs are immutable once stored (another
// run under a stored id is refused), so the same key is the same answer.
type compareKey struct {
	base, head string
	resamples  int
	seed       uint64
}

// compareOptions reads ?resamples= and ?seed=, defaulting to the server's,
// and says whether they are the defaults (whose answers pages link to and
// the cache keeps warm). Without a token a request may ask for no more
// resamples than the default (compare's, or the server's if larger):
// anyone could otherwise make the server work 5 times as hard a request.
func (s *Server) compareOptions(c echo.Context) (resamples int, seed uint64, custom bool, err error) {
	def := s.defaultResamples()
	resamples, seed = def, compare.DefaultSeed
	if v := c.QueryParam("resamples"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 || n > maxCompareResamples {
			return 0, 0, false, badRequest("resamples %q: want 100 to %d", v, maxCompareResamples)
		}
		resamples = n
	}
	if v := c.QueryParam("seed"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, false, badRequest("seed %q: want a whole number", v)
		}
		seed = n
	}
	if anon := max(def, compare.DefaultResamples); resamples > anon && !s.hasToken(c) {
		return 0, 0, false, echo.NewHTTPError(http.StatusUnauthorized, fmt.Sprintf(
			"resamples %d: over %d, a comparison needs a token (Authorization: Bearer TOKEN)", resamples, anon))
	}
	return resamples, seed, resamples != def || seed != compare.DefaultSeed, nil
}

// hasToken reports whether the request carries a live token.
func (s *Server) hasToken(c echo.Context) bool {
	if s.scope(c) != "" {
		return true // checked by requireReader
	}
	if tokenOf(c.Request()) == "" {
		return false
	}
	_, err := s.bearer(c)
	return err == nil
}

// compare loads two stored runs and compares them by paired bootstrap.
// Runs whose judged settings differ are compared anyway: the comparison
// carries the mismatch, and every view shows it first. The work is
// bounded: runs over MaxRecords are refused before they are loaded,
// a few bootstraps run at a time (those of other resamples or seeds in a
// slot of their own), each within CompareTimeout and stopped when the
// client leaves, and answers are cached by their key.
func (s *Server) compare(c echo.Context, baseID, headID string) (*compare.Comparison, *store.Run, *store.Run, error) {
	ctx := c.Request().Context()
	for _, id := range []string{baseID, headID} {
		if err := store.ValidID(id); err != nil {
			return nil, nil, nil, badRequest("compare needs ?base=ID&head=ID: %v", err)
		}
	}
	resamples, seed, custom, err := s.compareOptions(c)
	if err != nil {
		return nil, nil, nil, err
	}
	meta := make([]*store.Run, 2)
	for i, id := range []string{baseID, headID} {
		m, err := s.store.GetRun(ctx, id)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := s.visible(c, m); err != nil {
			return nil, nil, nil, err
		}
		if m.Records > s.cfg.MaxRecords {
			return nil, nil, nil, echo.NewHTTPError(http.StatusUnprocessableEntity, fmt.Sprintf(
				"run %s has %d records; this server compares runs of up to %d (compare the files with udgam-ci compare)", id, m.Records, s.cfg.MaxRecords))
		}
		meta[i] = m
	}
	key := compareKey{base: baseID, head: headID, resamples: resamples, seed: seed}
	if cmp, ok := s.compares.get(key); ok {
		return cmp, meta[0], meta[1], nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CompareTimeout)
	defer cancel()
	slots := s.compareSlots
	if custom {
		slots = s.customSlots
	}
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
	case <-ctx.Done():
		return nil, nil, nil, s.compareStopped(ctx, baseID, headID)
	}
	runs := make([]*runfile.Run, 2)
	for i, id := range []string{baseID, headID} {
		if runs[i], err = s.store.LoadRun(ctx, id); err != nil {
			if ctx.Err() != nil {
				return nil, nil, nil, s.compareStopped(ctx, baseID, headID)
			}
			return nil, nil, nil, err
		}
	}
	cmp, err := compare.RunsContext(ctx, runs[0], runs[1], compareOpts(resamples, seed, false))
	if ctx.Err() != nil {
		return nil, nil, nil, s.compareStopped(ctx, baseID, headID)
	}
	if err != nil {
		return nil, nil, nil, echo.NewHTTPError(http.StatusUnprocessableEntity, fmt.Sprintf("compare %s with %s: %v", baseID, headID, err))
	}
	s.compares.put(key, cmp)
	return cmp, meta[0], meta[1], nil
}

// compareOpts is the server's one set of comparison options: the
// compare page's, its API's and, headline alone, the history page's
// interval of each change (the same numbers: each part of a comparison
// resamples its own stream).
func compareOpts(resamples int, seed uint64, headlineOnly bool) compare.Options {
	o := compare.NewOptions()
	o.Resamples, o.Seed, o.AllowSettingsMismatch, o.ByLevel, o.HeadlineOnly = resamples, seed, true, true, headlineOnly
	return o
}

// defaultResamples is the bootstrap size of a comparison that asks for none.
func (s *Server) defaultResamples() int {
	if s.cfg.CompareResamples != 0 {
		return s.cfg.CompareResamples
	}
	return compare.DefaultResamples
}

// deltaJob asks for the interval of the change from base to run: its
// baseline, or (anchor) its model's anchor.
type deltaJob struct {
	run, base string
	anchor    bool
}

// deltaQueue bounds the intervals waiting to be computed: when uploads
// come faster than their bootstraps, the rest go without (their history
// rows link the comparison instead) rather than queue without end.
const deltaQueue = 64

// queueDelta asks for a stored run's change interval after the upload is
// answered, so an upload costs no bootstrap.
func (s *Server) queueDelta(run, base string) { s.queue(deltaJob{run: run, base: base}) }

// queue hands a change interval to deltaWorker, or drops it when too
// many wait.
func (s *Server) queue(j deltaJob) {
	s.deltaWG.Add(1)
	select {
	case s.deltas <- j:
	default:
		s.deltaWG.Done()
		s.log.Warn("change interval skipped: too many waiting", "run", j.run, "baseline", j.base, "anchor", j.anchor)
	}
}

// deltaWorker computes queued change intervals one at a time, in a
// bootstrap slot like any comparison the pages link to.
func (s *Server) deltaWorker() {
	for j := range s.deltas {
		if err := s.storeDelta(j); err != nil {
			s.log.Warn("change interval not stored", "run", j.run, "baseline", j.base, "err", err.Error())
		}
		s.deltaWG.Done()
	}
}

// storeDelta is the interval of the change from a run's baseline to it,
// as the compare page of the two gives it, stored with the run.
func (s *Server) storeDelta(j deltaJob) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CompareTimeout)
	defer cancel()
	meta, err := s.store.GetRun(ctx, j.base)
	if err != nil {
		return err
	}
	if meta.Records > s.cfg.MaxRecords {
		return fmt.Errorf("baseline %s has %d records, over the %d this server compares", j.base, meta.Records, s.cfg.MaxRecords)
	}
	select {
	case s.compareSlots <- struct{}{}:
		defer func() { <-s.compareSlots }()
	case <-ctx.Done():
		return ctx.Err()
	}
	runs := make([]*runfile.Run, 2)
	for i, id := range []string{j.base, j.run} {
		if runs[i], err = s.store.LoadRun(ctx, id); err != nil {
			return err
		}
	}
	opts := compareOpts(s.defaultResamples(), compare.DefaultSeed, true)
	// A drift is the model's only when measured with the anchor's
	// settings: a run scored otherwise gets no change since the anchor.
	opts.AllowSettingsMismatch = !j.anchor
	cmp, err := compare.RunsContext(ctx, runs[0], runs[1], opts)
	if err != nil {
		return err
	}
	head, err := s.store.GetRun(ctx, j.run)
	if err != nil {
		return err
	}
	// A whole run's change is of the whole scores, so every record must
	// pair; a partial run's is only ever the paired one over its records.
	if cmp.OnlyHead > 0 || cmp.OnlyBase > 0 && head.Partial == "" {
		return fmt.Errorf("not every record is paired (%d only in the baseline, %d only in the run)", cmp.OnlyBase, cmp.OnlyHead)
	}
	if j.anchor {
		if err := s.store.SetAnchorDelta(ctx, j.run, j.base, cmp.Delta, cmp.CI[0], cmp.CI[1]); err != nil {
			return err
		}
		s.logDrift(ctx, head, store.AnchorDelta{AnchorID: j.base, Delta: cmp.Delta, Lo: cmp.CI[0], Hi: cmp.CI[1]})
		return nil
	}
	if err := s.store.SetDelta(ctx, j.run, j.base, cmp.Delta, cmp.CI[0], cmp.CI[1]); err != nil {
		return err
	}
	s.notifyRegression(head, cmp)
	return nil
}

// compareStopped is the answer to a comparison whose time ran out or whose
// client left (the client then never reads it).
func (s *Server) compareStopped(ctx context.Context, baseID, headID string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return echo.NewHTTPError(http.StatusServiceUnavailable, fmt.Sprintf("compare %s with %s: not done within this server's limit of %s; try again later", baseID, headID, s.cfg.CompareTimeout))
	}
	return echo.NewHTTPError(http.StatusServiceUnavailable, fmt.Sprintf("compare %s with %s: cancelled", baseID, headID))
}
