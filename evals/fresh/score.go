package fresh

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/textprep"
)

// TokenByter is what scoring without BOS needs from a model: the bytes of
// a token's text, so the unscored first token's bytes can be left out of
// the byte count.
type TokenByter interface {
	TokenBytes(id int32) ([]byte, error)
}

// FirstByter is a model that knows how many bytes of a text its first
// token covers when it prepares text before tokenizing it
// (runner/textprep: added tokens, normalizers). Other models' first token
// is read with TokenBytes.
type FirstByter interface {
	FirstTokenBytes(text string, first int32) (int, error)
}

// Formulations record the BOS convention in the settings.
const (
	FormulationBOS   = "bpb/v1: each document alone after BOS, every token scored once"
	FormulationNoBOS = "bpb/v1: each document alone without BOS, first token unscored and its bytes left out"
)

// Formulation names the convention a BOS choice implies.
func Formulation(addBOS bool) string {
	if addBOS {
		return FormulationBOS
	}
	return FormulationNoBOS
}

// DefaultBatchTokens is how many tokens of windows go to the engine in one
// Score call: enough for it to fill its batches with many short documents.
const DefaultBatchTokens = 16384

// ScoreOptions are the settings of scoring.
type ScoreOptions struct {
	Window, Stride int
	AddBOS         bool
	BOS            int32
	BatchTokens    int // 0: DefaultBatchTokens
}

// job is one document being scored, or one span of it.
type job struct {
	doc   *Document
	seq   []int32
	spans []span
	logp  [][]float64 // per span, in nats
	left  int         // spans without results yet
	first int         // bytes of the unscored first token (no BOS)
	// only, from 1, is the one span a sequential run over spans scores
	// of this document (Part.Span); 0 scores them all.
	only int
}

// Part is what Score scores of a document: every window (Span 0), or
// only the window whose scored span is Span (from 1), with its context,
// for a sequential run over spans.
type Part struct {
	Doc  *Document
	Span int
}

// pending is one window request waiting for the engine.
type pending struct {
	job  *job
	span int
}

// scorer packs the windows of many documents into each Score call and
// hands out records in data order as documents complete.
type scorer struct {
	m     runner.Model
	opt   ScoreOptions
	emit  func(runfile.Doc) error
	reqs  []runner.Request
	owner []pending
	size  int    // tokens in reqs
	queue []*job // documents not yet emitted, in data order
}

// Score scores docs with m and calls emit with each document's record, in
// data order, as soon as that document and all before it are done. A
// document's windows may travel in one call with other documents' windows.
func Score(ctx context.Context, m runner.Model, docs []Document, opt ScoreOptions, emit func(runfile.Doc) error) error {
	if err := validateWindow(opt.Window, opt.Stride); err != nil {
		return err
	}
	return score(ctx, m, docs, opt, emit)
}

// score is Score for a caller that has validated the window (Run, before
// it writes the run file).
func score(ctx context.Context, m runner.Model, docs []Document, opt ScoreOptions, emit func(runfile.Doc) error) error {
	parts := make([]Part, len(docs))
	for i := range docs {
		parts[i] = Part{Doc: &docs[i]}
	}
	return scoreParts(ctx, m, parts, opt, emit)
}

// scoreParts is score over parts of documents: whole ones, or single
// spans (a span record each).
func scoreParts(ctx context.Context, m runner.Model, parts []Part, opt ScoreOptions, emit func(runfile.Doc) error) error {
	if opt.BatchTokens <= 0 {
		opt.BatchTokens = DefaultBatchTokens
	}
	s := &scorer{m: m, opt: opt, emit: emit}
	for _, part := range parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		j, err := s.prepare(part.Doc, part.Span)
		if err != nil {
			return err
		}
		s.queue = append(s.queue, j)
		for k, sp := range j.spans {
			if j.only != 0 && k != j.only-1 {
				continue
			}
			s.reqs = append(s.reqs, runner.Request{Branches: []runner.Branch{{
				Tokens:    j.seq[sp.Begin:sp.End],
				Positions: positions(sp),
			}}})
			s.owner = append(s.owner, pending{j, k})
			s.size += sp.End - sp.Begin
		}
		if s.size >= opt.BatchTokens {
			if err := s.flush(ctx); err != nil {
				return err
			}
		}
		// A document without windows (one token, no BOS) is already done.
		if err := s.emitDone(); err != nil {
			return err
		}
	}
	if err := s.flush(ctx); err != nil {
		return err
	}
	if err := s.emitDone(); err != nil {
		return err
	}
	if len(s.queue) > 0 {
		return fmt.Errorf("document %s: windows left without results", s.queue[0].doc.ID)
	}
	return nil
}

// prepare tokenises a document and lays out its windows: all of them, or
// only span only (from 1; 0 for all).
func (s *scorer) prepare(d *Document, only int) (*job, error) {
	toks, err := s.m.Tokenize(d.Text)
	if err != nil {
		return nil, fmt.Errorf("document %s: tokenize: %w", d.ID, err)
	}
	// A text the tokenizer gives no tokens (as SentencePiece may give none
	// for some whitespace) is still a document: read from BOS, as the
	// reference reads it, nothing is scored and all its bytes count.
	j := &job{doc: d}
	if s.opt.AddBOS {
		j.seq = append(make([]int32, 0, len(toks)+1), s.opt.BOS)
		j.seq = append(j.seq, toks...)
	} else if len(toks) > 0 {
		j.seq = toks
		if j.first, err = firstTokenBytes(s.m, d, toks[0]); err != nil {
			return nil, err
		}
	}
	j.spans = plan(len(j.seq), s.opt.Window, s.opt.Stride)
	if err := checkCoverage(len(j.seq), s.opt.Window, j.spans); err != nil {
		return nil, fmt.Errorf("document %s: %w", d.ID, err)
	}
	j.logp = make([][]float64, len(j.spans))
	j.left = len(j.spans)
	if only != 0 {
		if only > len(j.spans) {
			return nil, fmt.Errorf("document %s: span %d of %d windows: the baseline's tokenizer laid out more windows than this model's (--until decided over spans pairs the same windows, so both runs need the same tokenizer, window and stride)", d.ID, only, len(j.spans))
		}
		j.only, j.left = only, 1
	}
	return j, nil
}

// firstTokenBytes is how many bytes of the text the first token covers. A
// SentencePiece tokenizer that puts a space in front of the text
// (runner.Info.AddSpacePrefix) shows it in the first piece; that space is
// not in the text, so it is not counted, and a lone "▁" covers nothing.
func firstTokenBytes(m runner.Model, d *Document, tok int32) (int, error) {
	if fb, ok := m.(FirstByter); ok {
		n, err := fb.FirstTokenBytes(d.Text, tok)
		if err != nil {
			return 0, fmt.Errorf("document %s: %w", d.ID, err)
		}
		return n, nil
	}
	tb, ok := m.(TokenByter)
	if !ok {
		return 0, fmt.Errorf("document %s: scoring without BOS needs the bytes of the first token, which this model cannot give (use --add-bos yes)", d.ID)
	}
	piece, err := tb.TokenBytes(tok)
	if err != nil {
		return 0, fmt.Errorf("document %s: first token: %w", d.ID, err)
	}
	n, err := textprep.PieceCover(piece, d.Text, m.Info().AddSpacePrefix, tok)
	if err != nil {
		return 0, fmt.Errorf("document %s: %w", d.ID, err)
	}
	return n, nil
}

// positions lists a span's scored positions relative to its first token.
func positions(sp span) []int {
	ps := make([]int, 0, sp.End-sp.From)
	for p := sp.From; p < sp.End; p++ {
		ps = append(ps, p-sp.Begin)
	}
	return ps
}

// flush sends the waiting windows to the engine and files each result as
// the engine completes it (runner.ScoreEach), emitting every document
// whose windows are all done: a long call saves documents as it goes.
func (s *scorer) flush(ctx context.Context) error {
	if len(s.reqs) == 0 {
		return nil
	}
	var emitErr error
	err := runner.ScoreEach(ctx, s.m, s.reqs, func(i int, r runner.Result) error {
		o := s.owner[i]
		want := len(s.reqs[i].Branches[0].Positions)
		if len(r) != 1 || len(r[0]) != want {
			return fmt.Errorf("document %s window %d: engine returned the wrong shape (want 1 branch of %d log-probabilities)", o.job.doc.ID, o.span, want)
		}
		o.job.logp[o.span] = r[0]
		o.job.left--
		emitErr = s.emitDone()
		return emitErr
	})
	if emitErr != nil {
		return emitErr
	}
	if err != nil {
		return fmt.Errorf("score %d windows (document %s first): %w", len(s.reqs), s.owner[0].job.doc.ID, err)
	}
	s.reqs, s.owner, s.size = s.reqs[:0], s.owner[:0], 0
	return nil
}

// emitDone emits the finished documents at the front of the queue.
func (s *scorer) emitDone() error {
	for len(s.queue) > 0 && s.queue[0].left == 0 {
		j := s.queue[0]
		s.queue = s.queue[1:]
		rec, err := j.record(s.opt.AddBOS)
		if err != nil {
			return err
		}
		if err := s.emit(rec); err != nil {
			return err
		}
	}
	return nil
}

// record sums a finished document, or its one span. Each span's
// log-probabilities are added in position order and the document's bits
// are its spans' bits added in span order (runfile.SpanBits), whatever
// the packing, so packing cannot change the result and a document put
// together from span records is its whole record to the bit.
func (j *job) record(addBOS bool) (runfile.Doc, error) {
	spans := make([]runfile.Span, 0, len(j.logp))
	for k, lps := range j.logp {
		if j.only != 0 && k != j.only-1 {
			continue
		}
		var nats float64
		for i, lp := range lps {
			if math.IsNaN(lp) || lp > 1e-6 || math.IsInf(lp, 1) {
				p := j.spans[k].From + i
				return runfile.Doc{}, fmt.Errorf("document %s: token %d has log-probability %v, want a number <= 0", j.doc.ID, p, lp)
			}
			nats += lp
		}
		if want := j.spans[k].End - j.spans[k].From; len(lps) != want {
			return runfile.Doc{}, fmt.Errorf("document %s window %d: %d tokens scored, want %d", j.doc.ID, k+1, len(lps), want)
		}
		bits := 0.0
		if nats != 0 {
			bits = -nats / math.Ln2
		}
		if math.IsInf(bits, 0) {
			return runfile.Doc{}, errors.New("document " + j.doc.ID + ": a token has probability 0 (infinite bits)")
		}
		spans = append(spans, runfile.Span{Tokens: len(lps), Bits: bits})
	}
	rec := runfile.Doc{
		ID:            j.doc.ID,
		Source:        j.doc.Source,
		Bytes:         len(j.doc.Text) - j.first,
		Windows:       len(j.spans),
		FirstUnscored: !addBOS,
		TextBytes:     len(j.doc.Text),
	}
	if j.only != 0 {
		// the span's share of the document's bytes, as the baseline's
		// whole record shares them (runfile.SpanBytes); the tokens of
		// every window are known once the document is tokenized
		all := make([]runfile.Span, len(j.spans))
		for k, sp := range j.spans {
			all[k].Tokens = sp.End - sp.From
		}
		rec.Bytes = runfile.SpanBytes(rec.Bytes, all)[j.only-1]
		rec.ID, rec.Of, rec.Span, rec.OfSpans = runfile.SpanID(j.doc.ID, j.only), j.doc.ID, j.only, len(j.spans)
		rec.Windows, rec.Tokens, rec.Bits = 1, spans[0].Tokens, spans[0].Bits
		return rec, nil
	}
	for _, sp := range spans {
		rec.Tokens += sp.Tokens
	}
	if want := max(len(j.seq)-1, 0); rec.Tokens != want {
		return runfile.Doc{}, fmt.Errorf("document %s: %d tokens scored, want %d", j.doc.ID, rec.Tokens, want)
	}
	rec.Bits = runfile.SpanBits(spans)
	if len(spans) > 0 {
		rec.Spans = spans
	}
	return rec, nil
}
