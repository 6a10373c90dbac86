package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// maxPinBody bounds the body of a pin: one optional number.
const maxPinBody = 4 << 10

// backfillAnchor is how many of a model's newest runs get their change
// since a newly pinned anchor computed; older rows show none.
const backfillAnchor = 32

// pinAnchor is POST /api/v1/runs/:id/anchor: the run becomes its model's
// anchor for its test, with the drift budget in the body. It needs an
// upload token of the run's repository.
func (s *Server) pinAnchor(c echo.Context) error {
	ctx := c.Request().Context()
	tok, err := s.bearer(c)
	if err != nil {
		return err
	}
	id, err := runID(c)
	if err != nil {
		return err
	}
	var req client.PinRequest
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxPinBody+1))
	if err != nil {
		return badRequest("read body: %v", err)
	}
	if len(body) > maxPinBody {
		return badRequest("body over %d bytes: want {\"max_drift\": NUMBER} or nothing", maxPinBody)
	}
	if len(body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return badRequest("body: %v; want {\"max_drift\": NUMBER} or nothing", err)
		}
	}
	a, err := s.store.PinAnchor(ctx, id, tok, req.MaxDrift)
	if err != nil {
		return err
	}
	r, err := s.store.GetRun(ctx, id)
	if err != nil {
		return err
	}
	s.log.Info("anchor pinned", "run", id, "repo", a.Repo, "model", a.Model, "test", a.Test)
	s.backfillAnchor(ctx, a)
	return c.JSON(http.StatusOK, wireAnchor(a, r))
}

// backfillAnchor queues the change since a new anchor of the model's
// newest whole runs, so the history page shows the drift at once.
func (s *Server) backfillAnchor(ctx context.Context, a store.Anchor) {
	page, err := s.store.ModelRuns(ctx, a.Repo, a.Model, store.Filter{Test: a.Test, Limit: backfillAnchor, Brief: true})
	if err != nil {
		s.log.Warn("changes since the anchor not queued", "anchor", a.RunID, "err", err.Error())
		return
	}
	for _, r := range page.Runs {
		if r.ID != a.RunID && r.Partial == "" && r.Invalid == "" {
			s.queue(deltaJob{run: r.ID, base: a.RunID, anchor: true})
		}
	}
}

// queueAnchorDelta asks for a new run's change since its model's anchor.
func (s *Server) queueAnchorDelta(ctx context.Context, r *store.Run) {
	if r.Partial != "" {
		return
	}
	a, err := s.store.AnchorOf(ctx, r.Repo, r.Model, r.Test)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			s.log.Warn("change since the anchor not queued", "run", r.ID, "err", err.Error())
		}
		return
	}
	if a.RunID != r.ID {
		s.queue(deltaJob{run: r.ID, base: a.RunID, anchor: true})
	}
}

// apiAnchor is GET .../models/{model}/anchor?test=TEST.
func (s *Server) apiAnchor(c echo.Context, m modelRef) error {
	test := c.QueryParam("test")
	if test == "" {
		return badRequest("test is required: ?test=fresh or ?test=probes")
	}
	if err := store.ValidTest(test); err != nil {
		return badRequest("%v", err)
	}
	a, err := s.store.AnchorOf(c.Request().Context(), m.Repo, m.Model, test)
	if err != nil {
		return err
	}
	r, err := s.store.GetRun(c.Request().Context(), a.RunID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wireAnchor(a, r))
}

func wireAnchor(a store.Anchor, r *store.Run) client.Anchor {
	return client.Anchor{Run: wireRun(r), MaxDrift: a.MaxDrift, PinnedAt: a.PinnedAt}
}

// beyondBudget says whether a change since the anchor is beyond the drift
// budget (nil or 0: none), by the rule a comparison's regression follows.
func beyondBudget(metric string, d store.AnchorDelta, budget *float64) bool {
	return budget != nil && *budget > 0 && compare.Judge(metric, d.Delta, [2]float64{d.Lo, d.Hi}, *budget) == compare.Regressed
}

// anchorView is a test's anchor as the history page shows it.
type anchorView struct {
	store.Anchor
	Run    *store.Run
	deltas map[string]store.AnchorDelta
	// ScoreText, BudgetText and Beyond (how many runs shown are beyond
	// the budget) are the line above the table.
	ScoreText, BudgetText string
	RunURL                string
	Beyond                int
}

// anchorView reads a test's anchor and the changes since it; nil when
// none is pinned.
func (s *Server) anchorView(ctx context.Context, m modelRef, test string) (*anchorView, error) {
	a, deltas, err := s.store.AnchorDeltas(ctx, m.Repo, m.Model, test)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := s.store.GetRun(ctx, a.RunID)
	if err != nil {
		return nil, err
	}
	v := &anchorView{Anchor: a, Run: r, deltas: deltas, RunURL: runPath(r.ID),
		ScoreText: fmtScore(r.Score.Metric, r.Score.Value), BudgetText: "none"}
	if a.MaxDrift != nil && *a.MaxDrift > 0 {
		v.BudgetText = report.FormatEffect(r.Score.Metric, *a.MaxDrift)
	}
	return v, nil
}

// mark fills a history row's change since the anchor.
func (v *anchorView) mark(row *historyRow) {
	if v == nil {
		return
	}
	row.AnchorCol, row.IsAnchor = true, row.ID == v.RunID
	d, ok := v.deltas[row.ID]
	if !ok {
		return
	}
	m := v.Run.Score.Metric
	row.SinceAnchor = report.FormatDelta(m, d.Delta) + " " + report.FormatCI(m, [2]float64{d.Lo, d.Hi})
	if row.Beyond = beyondBudget(m, d, v.MaxDrift); row.Beyond {
		v.Beyond++
	}
}

// chart is the anchor's score and the limit its budget sets, as the
// history chart draws them.
func (v *anchorView) chart() *chartAnchor {
	if v == nil {
		return nil
	}
	c := &chartAnchor{Value: v.Run.Score.Value, Label: "anchor " + shortRev(v.Run.Revision)}
	if v.MaxDrift != nil && *v.MaxDrift > 0 {
		// The budget is on the worse side: bits per byte up, accuracy down.
		c.Limit, c.HasLimit = v.Run.Score.Value+*v.MaxDrift, true
		if v.Run.Score.Metric == compare.MetricAccuracy {
			c.Limit = v.Run.Score.Value - *v.MaxDrift
		}
	}
	return c
}

// logDrift warns of a run whose change since its anchor is beyond the
// budget pinned with it: what the history page marks, for the operator's
// log too, whether or not a pull request failed.
func (s *Server) logDrift(ctx context.Context, r *store.Run, d store.AnchorDelta) {
	a, err := s.store.AnchorOf(ctx, r.Repo, r.Model, r.Test)
	if err != nil || a.RunID != d.AnchorID || !beyondBudget(r.Score.Metric, d, a.MaxDrift) {
		return
	}
	s.log.Warn("run beyond the drift budget since its anchor", "run", r.ID, "ref", r.Ref, "anchor", a.RunID,
		"change", d.Delta, "lo", d.Lo, "hi", d.Hi, "budget", *a.MaxDrift)
	s.notifyDrift(ctx, r, a, d)
}
