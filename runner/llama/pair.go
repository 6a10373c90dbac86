package llama

/*
#include "llama.h"
#include "score.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/udgamlabs/udgam-ci/runner"
)

// Pair scores requests on a reference model and an artifact made from it
// in lockstep: both decode the same planned step, and each read position's
// two rows of logits are compared before the next decode overwrites them,
// so no distribution is kept (memory is that of two ordinary scorers).
type Pair struct {
	Ref, Art *Model
}

var _ runner.PairScorer = (*Pair)(nil)

// NewPair checks that two loaded models can be compared token for token:
// the same vocabulary and the same packing limits, so one plan serves both.
func NewPair(ref, art *Model) (*Pair, error) {
	switch {
	case ref == nil || art == nil:
		return nil, errors.New("pair: both models are needed")
	case ref == art:
		return nil, fmt.Errorf("pair: %s is the same loaded model twice; load the artifact on its own", ref.info.Path)
	case ref.nVocab != art.nVocab:
		return nil, fmt.Errorf("pair: reference %s has %d tokens, artifact %s has %d", ref.info.Path, ref.nVocab, art.info.Path, art.nVocab)
	case ref.Limits() != art.Limits():
		return nil, fmt.Errorf("pair: reference %s and artifact %s pack differently (%+v, %+v); load both with the same options", ref.info.Path, art.info.Path, ref.Limits(), art.Limits())
	}
	return &Pair{Ref: ref, Art: art}, nil
}

// ScorePair implements runner.PairScorer. It holds both models for the
// call, the reference first: two pairs of the same models in opposite
// roles must not score at the same time.
func (p *Pair) ScorePair(ctx context.Context, reqs []runner.Request) ([]runner.PairResult, error) {
	ref, art := p.Ref, p.Art
	ref.mu.Lock()
	defer ref.mu.Unlock()
	art.mu.Lock()
	defer art.mu.Unlock()
	planned, unshare, err := ref.plan(reqs)
	if err != nil {
		return nil, fmt.Errorf("score pair: reference: %w", err)
	}
	if _, _, err := art.plan(reqs); err != nil {
		return nil, fmt.Errorf("score pair: artifact: %w", err)
	}
	res := [4][]runner.Result{}
	for i := range res {
		res[i] = runner.NewResults(planned)
	}
	defer C.llama_memory_clear(ref.mem, false)
	defer C.llama_memory_clear(art.mem, false)
	defer ref.abortOn(ctx)()
	defer art.abortOn(ctx)()

	if err := drive(ctx, planned, ref.Limits(), "score pair", func(st runner.Step) error { return p.step(st, res) }); err != nil {
		return nil, err
	}
	if unshare {
		for i := range res {
			res[i] = runner.Reshare(reqs, res[i])
		}
	}
	out := make([]runner.PairResult, len(reqs))
	for i := range out {
		out[i] = runner.PairResult{Ref: res[0][i], Art: res[1][i], KL: res[2][i], SameTop: res[3][i]}
	}
	return out, nil
}

// rowPair is what udgam_pair gives for one read position.
type rowPair struct {
	lseRef, lseArt, kl float64
	topRef, topArt     int
	bad                bool
}

// step decodes one planned step on both models, whole where both heads
// are outside their graphs, else a part at a time (parts), and files the
// reads: the reference's and the artifact's log-probabilities, KL and top
// agreement.
func (p *Pair) step(st runner.Step, res [4][]runner.Result) error {
	for _, part := range parts(st.Entries, min(p.Ref.partRows(), p.Art.partRows())) {
		if err := p.part(part, res); err != nil {
			return err
		}
	}
	p.Ref.release(st)
	p.Art.release(st)
	return nil
}

// part decodes entries on both models and files their reads, comparing
// at most outputRows rows of logits of each model at a time.
func (p *Pair) part(entries []runner.Entry, res [4][]runner.Result) error {
	outs, refRows, err := p.Ref.feed(entries)
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	artOuts, artRows, err := p.Art.feed(entries)
	if err != nil {
		return fmt.Errorf("artifact: %w", err)
	}
	if len(outs) != len(artOuts) {
		return fmt.Errorf("internal: the two models read %d and %d positions of one step", len(outs), len(artOuts))
	}
	most := p.Ref.outputRows()
	for c0 := 0; c0 < len(outs); c0 += most {
		c1 := min(len(outs), c0+most)
		if err := p.compare(entries, outs[c0:c1], p.Ref.logitRows(refRows[c0:c1]), p.Art.logitRows(artRows[c0:c1]), res); err != nil {
			return err
		}
	}
	return nil
}

// compare files the reads of entries[outs[k]] from the two models' rows
// of logits.
func (p *Pair) compare(entries []runner.Entry, outs []int, refRows, artRows []*C.float, res [4][]runner.Result) error {
	n := p.Ref.nVocab
	rows := make([]rowPair, len(outs))
	forEachParallel(len(outs), p.Ref.opts.Threads, func(k int) {
		var la, lb, kl C.double
		var ta, tb C.int
		r := &rows[k]
		r.bad = C.udgam_pair(refRows[k], artRows[k], C.int(n), &la, &lb, &kl, &ta, &tb) != 0
		r.lseRef, r.lseArt, r.kl = float64(la), float64(lb), float64(kl)
		r.topRef, r.topArt = int(ta), int(tb)
	})
	for k, i := range outs {
		e, r := entries[i], rows[k]
		if r.bad {
			return fmt.Errorf("a model produced a non-finite logit (at position %d)", e.Pos)
		}
		a := unsafe.Slice((*float32)(unsafe.Pointer(refRows[k])), n)
		b := unsafe.Slice((*float32)(unsafe.Pointer(artRows[k])), n)
		same := 0.0
		if r.topRef == r.topArt {
			same = 1
		}
		for _, rd := range e.Reads {
			res[0][rd.Req][rd.Branch][rd.Index] = float64(a[rd.Next]) - r.lseRef
			res[1][rd.Req][rd.Branch][rd.Index] = float64(b[rd.Next]) - r.lseArt
			res[2][rd.Req][rd.Branch][rd.Index] = r.kl
			res[3][rd.Req][rd.Branch][rd.Index] = same
		}
	}
	return nil
}

// drive plans the requests into steps and runs each: a cancelled ctx's
// error as it is, any other failure wrapped with what.
func drive(ctx context.Context, planned []runner.Request, lim runner.Limits, what string, step func(runner.Step) error) error {
	p := runner.NewPlanner(planned, lim)
	for {
		st, ok := p.Next()
		if !ok {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := step(st); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}
