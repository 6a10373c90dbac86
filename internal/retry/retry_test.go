package retry

import (
	"net/http"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	h := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	tests := []struct {
		attempt int
		h       http.Header
		want    time.Duration
	}{
		{0, nil, time.Second},
		{2, nil, 4 * time.Second},
		{20, nil, time.Minute},
		{0, h("7"), 7 * time.Second},
		{0, h(now.Add(90 * time.Second).Format(http.TimeFormat)), 90 * time.Second},
		{3, h("soon"), 8 * time.Second},
		{0, h("86400"), 5 * time.Minute},
		{0, h(now.Add(-time.Minute).Format(http.TimeFormat)), 0},
	}
	for _, tt := range tests {
		if got := Backoff(tt.attempt, tt.h, now); got != tt.want {
			t.Errorf("Backoff(%d, %v) = %v, want %v", tt.attempt, tt.h, got, tt.want)
		}
	}
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]bool{200: false, 404: false, 403: false, 429: true, 500: true, 503: true} {
		if got := Retryable(status); got != want {
			t.Errorf("Retryable(%d) = %v, want %v", status, got, want)
		}
	}
}
