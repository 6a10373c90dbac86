package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// Anchor is the run pinned as a repository's model's anchor for one test
// (a release each pull request is also compared with), as
// GET .../models/{model}/anchor?test=TEST and the pin answer.
type Anchor struct {
	Run Run `json:"run"`
	// MaxDrift is the drift budget pinned with it, in the test's unit
	// (bits per byte, accuracy points): the server flags a base-branch
	// run whose change since the anchor is beyond it. Nil or 0 for none.
	MaxDrift *float64  `json:"max_drift,omitempty"`
	PinnedAt time.Time `json:"pinned_at"`
}

// PinRequest is the body of POST /api/v1/runs/{id}/anchor.
type PinRequest struct {
	MaxDrift *float64 `json:"max_drift,omitempty"`
}

// PinAnchor pins a stored run as its model's anchor for its test, with a
// drift budget (nil for none); it needs an upload token of the run's
// repository and replaces the anchor pinned before.
func (c *Client) PinAnchor(ctx context.Context, id string, maxDrift *float64) (*Anchor, error) {
	b, err := json.Marshal(PinRequest{MaxDrift: maxDrift})
	if err != nil {
		return nil, err
	}
	resp, err := c.send(ctx, http.MethodPost, "/api/v1/runs/"+url.PathEscape(id)+"/anchor", "application/json", bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("pin run %s as the anchor: %w", id, err)
	}
	defer resp.Body.Close()
	var a Anchor
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return nil, fmt.Errorf("pin run %s as the anchor: read the answer: %w", id, err)
	}
	return &a, nil
}

// AnchorOf fetches which run is pinned as the anchor of a repository's
// model and test; an error wrapping ErrNotFound when none is.
func (c *Client) AnchorOf(ctx context.Context, repo, model, test string) (*Anchor, error) {
	if !runfile.IsGitRepo(repo) {
		return nil, fmt.Errorf("anchor of %s: repository %q: want OWNER/NAME", model, repo)
	}
	var a Anchor
	u := "/api/v1" + ModelPath(repo, model) + "/anchor?" + url.Values{"test": {test}}.Encode()
	if err := c.getJSON(ctx, u, &a); err != nil {
		return nil, fmt.Errorf("anchor of %s in %s (%s): %w", model, repo, test, err)
	}
	return &a, nil
}

// Anchor fetches the anchor run of a repository's model and test, records
// and all; an error wrapping ErrNotFound when none is pinned.
func (c *Client) Anchor(ctx context.Context, repo, model, test string) (*runfile.Run, error) {
	a, err := c.AnchorOf(ctx, repo, model, test)
	if err != nil {
		return nil, err
	}
	return c.RunFile(ctx, a.Run.ID)
}
