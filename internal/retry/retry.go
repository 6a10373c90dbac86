// Package retry is the one policy for HTTP retries, shared by the Hugging
// Face client, the Fresh Text builder's Wikipedia and arXiv clients and
// the report server's client (uploads the server was too busy to read):
// which answers are worth another try and how long to wait before it.
package retry

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retryable reports whether an HTTP status is worth another try: rate
// limits and server errors.
func Retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// Backoff is the wait before retry number attempt (0-based): the server's
// Retry-After when it gives one in seconds or as a date (at most
// maxRetryAfter, so a job is not parked for hours), else 1s, 2s, 4s...
// capped at a minute.
func Backoff(attempt int, h http.Header, now time.Time) time.Duration {
	if ra := h.Get("Retry-After"); ra != "" {
		if s, err := strconv.Atoi(strings.TrimSpace(ra)); err == nil && s >= 0 {
			return min(time.Duration(s)*time.Second, maxRetryAfter)
		}
		if t, err := http.ParseTime(ra); err == nil {
			return min(max(t.Sub(now), 0), maxRetryAfter)
		}
	}
	d := time.Second << min(attempt, 6)
	return min(d, time.Minute)
}

const maxRetryAfter = 5 * time.Minute

// Sleep waits for d or until ctx is done: the default sleep of clients
// that retry.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
