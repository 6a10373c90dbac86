package probes

import (
	"context"
	"fmt"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// Formulation names how a choice is scored; it is a judged setting, so runs
// scored another way are never compared silently.
const Formulation = "sum-logprob, space-prefixed choice, separate tokenization"

// DefaultBatch is how many items go to the engine in one Score call: enough
// for it to pack many prompts and their branches into each decode.
const DefaultBatch = 64

// Cells is the KV cache `score probes` opens: 1,024 cells hold several
// items at once, and fewer cells keep attention cheap.
const Cells = 1024

// ScoreOptions are the settings of scoring, as fresh.ScoreOptions are
// Fresh Text's.
type ScoreOptions struct {
	AddBOS bool  // put BOS before the prompt (resolved from auto|yes|no)
	BOS    int32 // the BOS id, used when AddBOS
	Batch  int   // items per engine Score call; DefaultBatch when 0
}

// request is one item turned into tokens: the prompt as the shared prefix,
// each choice as a branch.
type request struct {
	req        runner.Request
	choiceLens []int // bytes of " "+choice, for the per-byte score
	tokens     int   // choice tokens over all branches
}

// BuildRequest tokenises an item: the prompt (after BOS when asked) is the
// prefix, and each " "+choice is tokenised on its own and appended, so no
// token merges across the boundary. Every choice token is scored.
func BuildRequest(tok runner.Tokenizer, it *Item, addBOS bool, bos int32) (runner.Request, error) {
	r, err := buildRequest(tok, it, addBOS, bos)
	return r.req, err
}

func buildRequest(tok runner.Tokenizer, it *Item, addBOS bool, bos int32) (request, error) {
	prompt, err := tok.Tokenize(it.Prompt)
	if err != nil {
		return request{}, fmt.Errorf("item %s: tokenize prompt: %w", it.ID, err)
	}
	var prefix []int32
	if addBOS {
		prefix = append(prefix, bos)
	}
	prefix = append(prefix, prompt...)
	if len(prefix) == 0 {
		return request{}, fmt.Errorf("item %s: the prompt has no tokens", it.ID)
	}
	r := request{req: runner.Request{Prefix: prefix}}
	for _, cont := range ChoiceTexts(it) {
		c := cont[1:]
		toks, err := tok.Tokenize(cont)
		if err != nil {
			return request{}, fmt.Errorf("item %s: tokenize choice %q: %w", it.ID, c, err)
		}
		if len(toks) == 0 {
			return request{}, fmt.Errorf("item %s: choice %q has no tokens", it.ID, c)
		}
		pos := make([]int, len(toks))
		for i := range pos {
			pos[i] = len(prefix) + i
		}
		r.req.Branches = append(r.req.Branches, runner.Branch{Tokens: toks, Positions: pos})
		r.choiceLens = append(r.choiceLens, len(cont))
		r.tokens += len(toks)
	}
	return r, nil
}

// ChoiceTexts are the texts tokenized for an item's choices: " " + choice.
func ChoiceTexts(it *Item) []string {
	out := make([]string, len(it.Choices))
	for i, c := range it.Choices {
		out[i] = " " + c
	}
	return out
}

// Score scores items on m by the log-probability of each choice after the
// prompt, in batches, and hands each record to emit as its batch
// completes, in item order.
func Score(ctx context.Context, m runner.Model, items []Item, opt ScoreOptions, emit func(runfile.Item) error) error {
	batch := opt.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	for start := 0; start < len(items); start += batch {
		chunk := items[start:min(start+batch, len(items))]
		reqs := make([]request, len(chunk))
		plain := make([]runner.Request, len(chunk))
		for i := range chunk {
			r, err := buildRequest(m, &chunk[i], opt.AddBOS, opt.BOS)
			if err != nil {
				return err
			}
			reqs[i], plain[i] = r, r.req
		}
		results, err := m.Score(ctx, plain)
		if err != nil {
			return fmt.Errorf("score items %s to %s: %w", chunk[0].ID, chunk[len(chunk)-1].ID, err)
		}
		if len(results) != len(chunk) {
			return fmt.Errorf("score items %s to %s: the engine returned %d results for %d requests", chunk[0].ID, chunk[len(chunk)-1].ID, len(results), len(chunk))
		}
		for i := range chunk {
			rec, err := record(&chunk[i], reqs[i], results[i])
			if err != nil {
				return err
			}
			if err := emit(rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// record sums each branch's log-probabilities and picks the highest; ties
// go to the first such choice and are marked.
func record(it *Item, r request, res runner.Result) (runfile.Item, error) {
	if len(res) != len(r.req.Branches) {
		return runfile.Item{}, fmt.Errorf("item %s: %d branch results for %d choices", it.ID, len(res), len(r.req.Branches))
	}
	rec := runfile.Item{
		ID:       it.ID,
		Type:     it.Type,
		Level:    it.Level,
		Logprobs: make([]float64, len(res)),
		Norm:     make([]float64, len(res)),
		Answer:   it.AnswerIndex(),
		Tokens:   r.tokens,
		Variant:  it.Variant,
	}
	for b, lps := range res {
		if len(lps) != len(r.req.Branches[b].Positions) {
			return runfile.Item{}, fmt.Errorf("item %s choice %d: %d log-probabilities for %d tokens", it.ID, b, len(lps), len(r.req.Branches[b].Positions))
		}
		var sum float64
		for _, lp := range lps {
			sum += lp
		}
		rec.Logprobs[b] = sum
		rec.Norm[b] = sum / float64(r.choiceLens[b])
	}
	rec.Pred, rec.Tie = runfile.Pick(rec.Logprobs)
	rec.Correct = rec.Pred == rec.Answer
	return rec, nil
}
