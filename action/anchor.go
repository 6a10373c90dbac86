package action

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// AnchorServer, as the anchor input, takes each test's anchor from the
// runs pinned on the report server.
const AnchorServer = "server"

// checkAnchor checks the anchor input: server, or run files and run ids
// on the report server, separated by commas.
func checkAnchor(anchor, serverURL string, isLocal func(string) bool) error {
	if anchor == "" {
		return nil
	}
	if anchor == AnchorServer {
		if serverURL == "" {
			return errors.New("server needs server-url (or name run files)")
		}
		return nil
	}
	for _, p := range strings.Split(anchor, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
			return fmt.Errorf("%q has an empty entry", anchor)
		case isLocal(p) || strings.HasSuffix(p, ".jsonl"):
		case serverURL == "":
			return fmt.Errorf("%q is neither a run file nor, without server-url, a run on the report server", p)
		}
	}
	return nil
}

// anchorRuns returns each test's anchor run, nil where there is none. A
// report server it cannot reach costs the anchor comparison, with a
// warning, as it costs the baseline; an anchor named but unreadable is an
// error, since the gate would silently lose its drift budget.
func (r *actionRun) anchorRuns(ctx context.Context, tests []string) ([]*runfile.Run, error) {
	in := r.in
	out := make([]*runfile.Run, len(tests))
	if in.Anchor == AnchorServer {
		if r.srv == nil {
			r.warn("no anchor", "anchor: server needs a report server; nothing is compared with the anchor")
			return out, nil
		}
		for i, test := range tests {
			a, err := r.srv.Anchor(ctx, r.ev.Repo, in.ModelName, test)
			if err != nil {
				r.warn("report server unavailable", "anchor of %s from %s: %v", test, in.ServerURL, err)
				continue
			}
			if a == nil {
				r.warn("no anchor", "no %s run of %s is pinned as the anchor on %s (udgam-ci anchor pin)", test, in.ModelName, in.ServerURL)
			}
			out[i] = a
		}
		return out, nil
	}
	return runsByTest("anchor", in.Anchor, tests, func(p string) (*runfile.Run, error) {
		switch {
		case isLocal(p) || strings.HasSuffix(p, ".jsonl"):
			return runfile.ReadFile(p)
		case r.srv == nil:
			return nil, fmt.Errorf("run %s: no report server to fetch it from", p)
		}
		return r.srv.Run(ctx, p)
	})
}

// compareAnchors compares each head run with its test's anchor, paired on
// the same records, judged against the drift budget. Unlike the
// baseline's, an anchor's differing settings are refused: a drift
// measured across settings is not the model's.
func (r *actionRun) compareAnchors(ctx context.Context, res *Result) error {
	if r.in.Anchor == "" || len(res.Heads) == 0 {
		return nil
	}
	tests := make([]string, len(res.Heads))
	for i, h := range res.Heads {
		tests[i] = h.Header.Test
	}
	r.a.Group("Anchor " + r.in.Anchor)
	anchors, err := r.anchorRuns(ctx, tests)
	r.a.EndGroup()
	if err != nil {
		return err
	}
	for i, head := range res.Heads {
		if anchors[i] == nil {
			continue
		}
		opts := r.compareOptions()
		opts.AllowSettingsMismatch = false
		opts.HeadlineOnly = true
		opts.MinEffect = compare.MinEffect{BPB: r.in.MaxDriftBPB, Accuracy: r.in.MaxDriftAcc}
		c, err := compare.Runs(anchors[i], head, opts)
		if err != nil {
			res.AnchorErrors = append(res.AnchorErrors, fmt.Sprintf("%s: against anchor run %s: %v", head.Header.Test, anchors[i].Header.ID, err))
			continue
		}
		judgeDrift(c, opts.MinEffect.Of(head.Header.Test))
		res.Anchors = append(res.Anchors, c)
	}
	return nil
}

// judgeDrift judges a comparison with the anchor against the drift
// budget. A budget of 0 is none: the change since the anchor is shown and
// never judged. compare judges a sequential head (until: decided) by the
// minimum effect it stopped on against main; since the anchor, its
// anytime-valid interval is held to the budget instead.
func judgeDrift(c *compare.Comparison, budget float64) {
	switch {
	case budget == 0:
		c.MinEffect, c.Verdict, c.Significant = 0, compare.NoChange, false
	case c.Sequential != nil:
		c.MinEffect = budget
		c.Verdict = compare.Judge(c.Metric, c.Delta, c.CI, budget)
		c.Significant = c.Verdict != compare.NoChange
	}
}
