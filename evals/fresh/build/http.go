package build

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/udgamlabs/udgam-ci/internal/retry"
)

// client is a polite HTTP getter for one site: a User-Agent with a contact,
// at most one request per interval, and retries with backoff on 429 and 5xx
// (honouring Retry-After), as Wikimedia's and arXiv's API terms ask.
type client struct {
	http     *http.Client
	ua       string
	interval time.Duration
	retries  int
	now      func() time.Time
	sleep    func(context.Context, time.Duration) error
	last     time.Time // when the previous request was sent
}

// maxBody bounds one API answer; a Wikipedia extract or an arXiv page of
// 100 entries is far below it.
const maxBody = 64 << 20

// get fetches u and returns its body, retrying as the site asks.
func (c *client) get(ctx context.Context, u string) ([]byte, error) {
	var last error
	for attempt := 0; ; attempt++ {
		if err := c.pace(ctx); err != nil {
			return nil, err
		}
		body, h, again, err := c.try(ctx, u)
		if err == nil {
			return body, nil
		}
		if !again || attempt >= c.retries {
			if attempt > 0 {
				return nil, fmt.Errorf("after %d tries: %w", attempt+1, err)
			}
			return nil, err
		}
		last = err
		if err := c.sleep(ctx, retry.Backoff(attempt, h, c.now())); err != nil {
			return nil, fmt.Errorf("%w (last error: %v)", err, last)
		}
	}
}

// try sends one request. again says whether another try may help.
func (c *client) try(ctx context.Context, u string) (body []byte, h http.Header, again bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, false, err
	}
	req.Header.Set("User-Agent", c.ua)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, ctx.Err() == nil, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, resp.Header, true, fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.Header, retry.Retryable(resp.StatusCode), fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return body, resp.Header, false, nil
}

// pace waits until interval has passed since the previous request.
func (c *client) pace(ctx context.Context) error {
	if !c.last.IsZero() {
		if d := c.last.Add(c.interval).Sub(c.now()); d > 0 {
			if err := c.sleep(ctx, d); err != nil {
				return err
			}
		}
	}
	c.last = c.now()
	return nil
}
