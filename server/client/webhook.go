package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// Webhook event types.
const (
	EventRegression  = "regression"   // a base-branch run regressed against its baseline
	EventAuditFailed = "audit_failed" // an artifact audit exceeded its limits
	EventDrift       = "drift"        // a base-branch run drifted beyond its anchor's budget
)

// SignatureHeader carries the HMAC-SHA256 of a webhook's body, as GitHub's
// webhooks do: "sha256=" and the hex digest.
const SignatureHeader = "X-Hub-Signature-256"

// WebhookEvent is the JSON a report server posts to its webhook. Text is
// a line Slack's incoming webhooks show as it is.
type WebhookEvent struct {
	Event string    `json:"event"`
	ID    string    `json:"id"` // the same on every attempt of one event
	Time  time.Time `json:"time"`
	Text  string    `json:"text"`
	Repo  string    `json:"repo"`
	Model string    `json:"model"`
	// A regression: the run, its baseline, the change and its interval.
	Test       string      `json:"test,omitempty"`
	Run        string      `json:"run,omitempty"`
	BaselineID string      `json:"baseline_id,omitempty"`
	Metric     string      `json:"metric,omitempty"`
	Delta      *float64    `json:"delta,omitempty"`
	CI         *[2]float64 `json:"ci,omitempty"`
	// A drift: the anchor and its budget (Run, Metric, Delta and CI are
	// the run's change since the anchor).
	Anchor   string   `json:"anchor,omitempty"`
	MaxDrift *float64 `json:"max_drift,omitempty"`
	// An audit: its id, artifact and the reasons it failed.
	Audit    string   `json:"audit,omitempty"`
	Artifact string   `json:"artifact,omitempty"`
	Reasons  []string `json:"reasons,omitempty"`
	Revision string   `json:"revision,omitempty"`
	URL      string   `json:"url"` // the run's or the audit's page
}

// WebhookDelivery is one event and how its delivery went, as the API
// shows it to the token's owner.
type WebhookDelivery struct {
	ID        int64     `json:"id"`
	EventID   string    `json:"event_id"`
	Event     string    `json:"event"`
	Model     string    `json:"model"`
	State     string    `json:"state"` // pending, delivered, failed
	Attempts  int       `json:"attempts"`
	LastCode  int       `json:"last_code"` // the last answer's status, 0 for none
	Result    string    `json:"result"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Sign is the SignatureHeader value of body under secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySignature checks a webhook's SignatureHeader value against its
// body in constant time.
func VerifySignature(secret, body []byte, header string) error {
	got, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return errors.New("webhook signature: want sha256=HEX")
	}
	if !hmac.Equal([]byte("sha256="+got), []byte(Sign(secret, body))) {
		return errors.New("webhook signature: does not match the body under this secret")
	}
	return nil
}
