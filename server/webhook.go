package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/internal/retry"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// Webhook is where the server posts its events, signed with Secret. The
// events go through one background worker: an upload only puts its event
// on a queue, so a receiver that hangs or fails never slows one.
type Webhook struct {
	URL    string
	Secret []byte
	// Timeout bounds one attempt, answer included; 0 means
	// DefaultWebhookTimeout.
	Timeout time.Duration
	// Attempts bounds the tries of one event; 0 means DefaultWebhookAttempts.
	Attempts int
	// Backoff is the wait before retry number attempt (0-based); nil
	// means the project's policy, retry.Backoff (tests make it short).
	Backoff func(attempt int, h http.Header) time.Duration
}

// Webhook defaults: with retry.Backoff, 5 attempts span about 15 s of
// waiting, enough for a receiver's restart, not enough to pile events up.
const (
	DefaultWebhookTimeout  = 10 * time.Second
	DefaultWebhookAttempts = 5
	// webhookQueue bounds the events waiting: past it an event is
	// logged and dropped rather than held without end.
	webhookQueue = 256
	// maxDeliveries is how many deliveries the API lists.
	maxDeliveries = 100
)

func (w *Webhook) setDefaults() error {
	if w.URL == "" {
		return nil
	}
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("webhook URL %q: want an absolute http or https URL", w.URL)
	}
	if len(w.Secret) == 0 {
		return errors.New("webhook: no secret; every event is signed (--webhook-secret-file or UDGAM_WEBHOOK_SECRET)")
	}
	if w.Timeout <= 0 {
		w.Timeout = DefaultWebhookTimeout
	}
	if w.Attempts <= 0 {
		w.Attempts = DefaultWebhookAttempts
	}
	if w.Backoff == nil {
		w.Backoff = func(attempt int, h http.Header) time.Duration { return retry.Backoff(attempt, h, time.Now()) }
	}
	return nil
}

// webhookClient never follows a redirect: a receiver that moved must be
// configured again, and a redirect must not send the signed body elsewhere.
func webhookClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// startWebhook starts the worker when a webhook is configured.
func (s *Server) startWebhook() {
	if s.cfg.Webhook.URL == "" {
		return
	}
	s.hooks = make(chan client.WebhookEvent, webhookQueue)
	hc := webhookClient(s.cfg.Webhook.Timeout)
	go func() {
		for ev := range s.hooks {
			s.deliver(hc, ev)
		}
	}()
}

// notify queues an event and returns at once; with the queue full the
// event is logged and dropped.
func (s *Server) notify(ev client.WebhookEvent) {
	if s.hooks == nil {
		return
	}
	var id [12]byte
	rand.Read(id[:])
	ev.ID, ev.Time = "evt-"+hex.EncodeToString(id[:]), time.Now().UTC()
	select {
	case s.hooks <- ev:
	default:
		s.log.Warn("webhook event dropped: too many waiting", "event", ev.Event, "text", ev.Text)
	}
}

// notifyRegression posts a base-branch run whose whole score regressed
// against its baseline (the comparison stored after its upload).
func (s *Server) notifyRegression(head *store.Run, cmp *compare.Comparison) {
	if head.Ref != s.cfg.BaseRef || head.Partial != "" || cmp.Verdict != compare.Regressed {
		return
	}
	m := cmp.Metric
	delta, ci := cmp.Delta, cmp.CI
	url := s.absURL(comparePath(head.BaselineID, head.ID))
	s.notify(client.WebhookEvent{
		Event: client.EventRegression, Repo: head.Repo, Model: head.Model, Test: head.Test, Run: head.ID, BaselineID: head.BaselineID,
		Revision: head.Revision, Metric: m, Delta: &delta, CI: &ci, URL: url,
		Text: fmt.Sprintf("udgam-ci: %s (%s) regressed on %s: %s %s → %s, change %s %s %s (run %s against %s, revision %s) %s",
			head.Model, head.Repo, s.cfg.BaseRef, head.Test, fmtScore(m, cmp.Base), fmtScore(m, cmp.Head),
			report.FormatDelta(m, delta), report.FormatCI(m, ci), report.IntervalLabel(cmp.Confidence),
			head.ID, head.BaselineID, shortRev(head.Revision), url),
	})
}

// notifyDrift posts a base-branch run whose change since its model's
// anchor is beyond the anchor's budget (logDrift has checked that). Only
// the model's newest base-branch run is news: pinning an anchor computes
// the drift of older runs too, and those are not posted.
func (s *Server) notifyDrift(ctx context.Context, r *store.Run, a store.Anchor, d store.AnchorDelta) {
	if s.hooks == nil || r.Ref != s.cfg.BaseRef {
		return
	}
	if newest, err := s.store.Baseline(ctx, r.Repo, r.Model, s.cfg.BaseRef, r.Test); err != nil || newest.ID != r.ID {
		return
	}
	m := r.Score.Metric
	delta, ci, budget := d.Delta, [2]float64{d.Lo, d.Hi}, *a.MaxDrift
	url := s.absURL(comparePath(a.RunID, r.ID))
	s.notify(client.WebhookEvent{
		Event: client.EventDrift, Repo: r.Repo, Model: r.Model, Test: r.Test, Run: r.ID, Anchor: a.RunID, MaxDrift: &budget,
		Revision: r.Revision, Metric: m, Delta: &delta, CI: &ci, URL: url,
		Text: fmt.Sprintf("udgam-ci: %s (%s) drifted beyond its budget on %s: %s change since anchor %s %s %s, budget %s (run %s, revision %s) %s",
			r.Model, r.Repo, s.cfg.BaseRef, r.Test, a.RunID, report.FormatDelta(m, delta), report.FormatCI(m, ci),
			report.FormatScore(m, budget), r.ID, shortRev(r.Revision), url),
	})
}

// notifyAudit posts an artifact audit that failed its limits.
func (s *Server) notifyAudit(a store.Audit, r *audit.Report) {
	if a.Verdict != string(audit.Fail) {
		return
	}
	url := s.absURL(auditPath(a.ID))
	s.notify(client.WebhookEvent{
		Event: client.EventAuditFailed, Repo: a.Repo, Model: a.Model, Revision: a.Revision, Audit: a.ID, Artifact: a.Artifact,
		Reasons: r.Reasons, URL: url,
		Text: fmt.Sprintf("udgam-ci: the artifact audit of %s (%s) at revision %s failed: %s %s",
			a.Artifact, a.Repo, shortRev(a.Revision), strings.Join(r.Reasons, "; "), url),
	})
}

// deliver posts one event until it is answered 2xx, the answer says not
// to retry, or its attempts are spent, recording each attempt.
func (s *Server) deliver(hc *http.Client, ev client.WebhookEvent) {
	w := s.cfg.Webhook
	ctx := context.Background()
	body, err := json.Marshal(ev)
	if err != nil {
		s.log.Error("webhook: encode event", "event", ev.ID, "err", err.Error())
		return
	}
	row, err := s.store.AddDelivery(ctx, store.Delivery{EventID: ev.ID, Event: ev.Event, Repo: ev.Repo, Model: ev.Model, URL: w.URL, Body: string(body)})
	if err != nil {
		s.log.Error("webhook: record delivery", "event", ev.ID, "err", err.Error())
	}
	record := func(state string, attempts, code int, result string) {
		if row == 0 {
			return
		}
		if err := s.store.UpdateDelivery(ctx, row, state, attempts, code, result); err != nil {
			s.log.Error("webhook: record delivery", "event", ev.ID, "err", err.Error())
		}
	}
	for attempt := range w.Attempts {
		code, again, result, h := s.post(hc, ev, body)
		n := attempt + 1
		switch {
		case code/100 == 2:
			record(store.DeliveryDelivered, n, code, result)
			s.log.Info("webhook delivered", "event", ev.Event, "id", ev.ID, "attempts", n)
			return
		case !again || n == w.Attempts:
			result = fmt.Sprintf("%s; gave up after %d attempt(s)", result, n)
			record(store.DeliveryFailed, n, code, result)
			s.log.Warn("webhook not delivered", "event", ev.Event, "id", ev.ID, "result", result)
			return
		}
		wait := w.Backoff(attempt, h)
		record(store.DeliveryPending, n, code, fmt.Sprintf("%s; retrying in %s", result, wait))
		time.Sleep(wait)
	}
}

// post makes one attempt: its status (0 for no answer), whether another
// attempt may succeed, what happened in words, and the answer's headers.
func (s *Server) post(hc *http.Client, ev client.WebhookEvent, body []byte) (int, bool, string, http.Header) {
	w := s.cfg.Webhook
	req, err := http.NewRequest(http.MethodPost, w.URL, strings.NewReader(string(body)))
	if err != nil {
		return 0, false, "bad request: " + err.Error(), nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "udgam-ci-webhook")
	req.Header.Set("X-Udgam-Event", ev.Event)
	req.Header.Set("X-Udgam-Delivery", ev.ID)
	req.Header.Set(client.SignatureHeader, client.Sign(w.Secret, body))
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && ue.Timeout() {
			return 0, true, fmt.Sprintf("no answer within %s", w.Timeout), nil
		}
		return 0, true, "could not post: " + err.Error(), nil
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	code := resp.StatusCode
	switch {
	case code/100 == 2:
		return code, false, fmt.Sprintf("answered %d", code), resp.Header
	case code/100 == 3:
		return code, false, fmt.Sprintf("answered %d, a redirect to %q: not followed (configure the webhook's new URL)", code, resp.Header.Get("Location")), resp.Header
	}
	return code, retry.Retryable(code), fmt.Sprintf("answered %d", code), resp.Header
}

// apiDeliveries is GET /api/v1/webhooks/deliveries: the newest webhook
// deliveries of the token's repository and how each went.
func (s *Server) apiDeliveries(c echo.Context) error {
	tok, err := s.bearer(c)
	if err != nil {
		return err
	}
	ds, err := s.store.Deliveries(c.Request().Context(), tok.Repo, maxDeliveries)
	if err != nil {
		return err
	}
	out := make([]client.WebhookDelivery, len(ds))
	for i, d := range ds {
		out[i] = client.WebhookDelivery{ID: d.ID, EventID: d.EventID, Event: d.Event, Model: d.Model, State: d.State,
			Attempts: d.Attempts, LastCode: d.LastCode, Result: d.Result, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
	}
	return c.JSON(http.StatusOK, map[string]any{"deliveries": out})
}
