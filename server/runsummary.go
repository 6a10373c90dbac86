package server

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// runSummaryCacheSize bounds the probes summaries kept: one per run page
// recently drawn.
const runSummaryCacheSize = 256

// probeSummary is a stored probes run's summary as `score probes` prints
// it (probes.Summarize and compare.ProbeStats): its own margin with its interval, and the
// spread across the prompt variants it scored, which the stored summary
// lacks. Stored runs never change, so each is computed once, in a
// bootstrap slot like a comparison's; nil, with why, when the run is over
// this server's size or the slot did not come in time.
func (s *Server) probeSummary(c echo.Context, r *store.Run) (*probes.Summary, string) {
	if sum, ok := s.runSummaries.get(r.ID); ok {
		return sum, ""
	}
	if r.Records > s.cfg.MaxRecords || r.Invalid != "" {
		return nil, "not computed: the run is over this server's size or invalid"
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.cfg.CompareTimeout)
	defer cancel()
	select {
	case s.compareSlots <- struct{}{}:
		defer func() { <-s.compareSlots }()
	case <-ctx.Done():
		return nil, "not computed: the server is busy; reload later"
	}
	run, err := s.store.LoadRun(ctx, r.ID)
	if err != nil {
		s.log.Warn("run summary", "run", r.ID, "err", err.Error())
		return nil, "not computed: the run's records could not be read"
	}
	sum := probes.Summarize(run.Header, run.Items, 0)
	if sum.MarginCI, sum.Variants, err = compare.ProbeStats(run); err != nil {
		s.log.Warn("run summary", "run", r.ID, "err", err.Error())
		return nil, "not computed: " + err.Error()
	}
	s.runSummaries.put(r.ID, &sum)
	return &sum, ""
}
