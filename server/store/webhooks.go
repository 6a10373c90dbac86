package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Delivery is one webhook event and how its delivery went: a row, not the
// wire format (the server sends client.WebhookDelivery).
type Delivery struct {
	ID        int64
	EventID   string
	Event     string
	Repo      string
	Model     string
	URL       string
	Body      string
	State     string // DeliveryPending, DeliveryDelivered or DeliveryFailed
	Attempts  int
	LastCode  int
	Result    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// AddDelivery records an event about to be posted, pending, and returns
// its row id.
func (s *Store) AddDelivery(ctx context.Context, d Delivery) (int64, error) {
	now := s.now().UnixNano()
	var id int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries
			(event_id, event, repo, model, url, body, state, attempts, last_code, result, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, 'not sent yet', ?, ?)`,
			d.EventID, d.Event, d.Repo, d.Model, d.URL, d.Body, DeliveryPending, now, now)
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record webhook delivery %s: %w", d.EventID, asFull(err))
	}
	return id, nil
}

// UpdateDelivery records an attempt's outcome.
func (s *Store) UpdateDelivery(ctx context.Context, id int64, state string, attempts, code int, result string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = ?, attempts = ?, last_code = ?, result = ?, updated_at = ?
			WHERE id = ?`, state, attempts, code, result, s.now().UnixNano(), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("record webhook delivery %d: %w", id, asFull(err))
	}
	return nil
}

// Deliveries lists a repository's newest deliveries, newest first.
func (s *Store) Deliveries(ctx context.Context, repo string, limit int) ([]Delivery, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, event_id, event, repo, model, url, body, state, attempts, last_code, result,
		created_at, updated_at FROM webhook_deliveries WHERE repo = ? ORDER BY id DESC LIMIT ?`, repo, limit)
	if err != nil {
		return nil, fmt.Errorf("webhook deliveries of %s: %w", repo, err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		var d Delivery
		var created, updated int64
		if err := rows.Scan(&d.ID, &d.EventID, &d.Event, &d.Repo, &d.Model, &d.URL, &d.Body, &d.State, &d.Attempts,
			&d.LastCode, &d.Result, &created, &updated); err != nil {
			return nil, fmt.Errorf("webhook deliveries of %s: %w", repo, err)
		}
		d.CreatedAt, d.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webhook deliveries of %s: %w", repo, err)
	}
	return out, nil
}
