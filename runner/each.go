package runner

import (
	"context"
	"fmt"
)

// EachScorer is a Scorer that hands over each request's results as soon as
// they are complete, inside one call: a caller that packs many documents
// into a call saves each one and shows progress as it finishes, and an
// interrupted call loses only the unfinished ones.
type EachScorer interface {
	ScoreEach(ctx context.Context, reqs []Request, done func(i int, r Result) error) error
}

// ScoreEach scores reqs with s and calls done once for each request: as it
// completes where s is an EachScorer, else when the whole call returns. An
// error from done stops the call and is returned.
func ScoreEach(ctx context.Context, s Scorer, reqs []Request, done func(i int, r Result) error) error {
	if es, ok := s.(EachScorer); ok {
		return es.ScoreEach(ctx, reqs, done)
	}
	res, err := s.Score(ctx, reqs)
	if err != nil {
		return err
	}
	if len(res) != len(reqs) {
		return fmt.Errorf("engine returned %d results for %d requests", len(res), len(reqs))
	}
	for i, r := range res {
		if err := done(i, r); err != nil {
			return err
		}
	}
	return nil
}

// Completion tells an engine that plans steps when a request's results are
// complete: it counts each request's reads down as steps are decoded.
type Completion struct {
	left []int
	sent []bool
	res  []Result
	done func(int, Result) error
}

// NewCompletion follows reqs, whose results the engine writes into res.
func NewCompletion(reqs []Request, res []Result, done func(int, Result) error) *Completion {
	c := &Completion{left: make([]int, len(reqs)), sent: make([]bool, len(reqs)), res: res, done: done}
	for i, r := range reqs {
		for _, b := range r.Branches {
			c.left[i] += len(b.Positions)
		}
	}
	return c
}

// Step counts a decoded step's reads and hands over the requests it
// completed.
func (c *Completion) Step(st Step) error {
	for _, e := range st.Entries {
		for _, r := range e.Reads {
			if c.left[r.Req]--; c.left[r.Req] == 0 && !c.sent[r.Req] {
				c.sent[r.Req] = true
				if err := c.done(r.Req, c.res[r.Req]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Finish hands over whatever Step has not (requests that read nothing):
// every request is done once the last step is decoded.
func (c *Completion) Finish() error {
	for i := range c.left {
		if !c.sent[i] {
			c.sent[i] = true
			if err := c.done(i, c.res[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
