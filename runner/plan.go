package runner

import (
	"fmt"
	"slices"
)

// Limits bound how requests are packed into decode steps.
type Limits struct {
	BatchTokens int // tokens per decode call
	MaxSeqs     int // sequence ids available (the engine's parallel sequences)
	Cells       int // KV cache cells shared by all sequences
	// PackCells caps the cells that packed requests may hold together: a
	// request is admitted beside others only while they stay under it.
	// Every token attends (masked) over all cells in use, so packing long
	// sequences together costs more attention than it saves; packing short
	// ones fills the batch. 0 means Cells. A request alone may use Cells.
	PackCells int
	// Separate says each sequence has a cache of its own of Cells cells
	// (llama.cpp's kv_unified=false): no budget is shared, and no prompt can
	// be shared either, so requests must have one branch.
	Separate bool
	// ShareStarts evaluates once the leading tokens that sequences fed in
	// the same step have in common, across requests and between a
	// request's branches (probe items begin with the same template, their
	// choices often with the same token), as the prompt already is within
	// a request. The engine must let one cell belong to several sequences:
	// not with Separate caches, nor for recurrent state.
	ShareStarts bool
}

// Step is one decode call: tokens to evaluate, and the sequences to clear
// from the KV cache once its outputs have been read.
type Step struct {
	Entries []Entry
	Release []int32
}

// Entry is one token of a step.
type Entry struct {
	Token int32
	Pos   int32
	Seqs  []int32
	// Reads are the log-probabilities taken from this token's output; a
	// token with no reads asks llama.cpp for no logits.
	Reads []Read
}

// Read routes log p(Next | ...) into result[Req][Branch][Index].
type Read struct {
	Req, Branch, Index int
	Next               int32
}

// Validate checks requests against the limits and the vocabulary before
// anything reaches C: llama.cpp aborts or misbehaves on some bad input.
func Validate(reqs []Request, lim Limits, vocab int) error {
	for i, r := range reqs {
		if len(r.Branches) == 0 {
			return fmt.Errorf("request %d: no branches", i)
		}
		if lim.Separate && len(r.Branches) > 1 {
			return fmt.Errorf("request %d: %d branches share a prompt, which separate caches cannot do (use Unshare)", i, len(r.Branches))
		}
		if len(r.Branches) > lim.MaxSeqs {
			return fmt.Errorf("request %d: %d branches, more than the %d parallel sequences of the context", i, len(r.Branches), lim.MaxSeqs)
		}
		if n := cells(r); n > lim.Cells {
			return fmt.Errorf("request %d: %d tokens, longer than the context of %d tokens", i, n, lim.Cells)
		}
		for _, t := range r.Prefix {
			if t < 0 || int(t) >= vocab {
				return fmt.Errorf("request %d: token id %d out of range [0, %d)", i, t, vocab)
			}
		}
		for b, br := range r.Branches {
			for _, t := range br.Tokens {
				if t < 0 || int(t) >= vocab {
					return fmt.Errorf("request %d branch %d: token id %d out of range [0, %d)", i, b, t, vocab)
				}
			}
			n := len(r.Prefix) + len(br.Tokens)
			for _, p := range br.Positions {
				if p < 1 || p >= n {
					return fmt.Errorf("request %d branch %d: position %d out of range [1, %d)", i, b, p, n)
				}
			}
		}
	}
	return nil
}

// CheckTrainingContext refuses a branch longer than the model's training
// context (its GGUF context_length; 0 means unknown): no position past it
// was trained, and a model whose sliding window became its context
// (Mistral) computes other math there than llama.cpp's full attention.
func CheckTrainingContext(reqs []Request, trained int) error {
	if trained <= 0 {
		return nil
	}
	for i, r := range reqs {
		for b, br := range r.Branches {
			if n := len(r.Prefix) + len(br.Tokens); n > trained {
				return fmt.Errorf("request %d branch %d: %d tokens, longer than the model's training context of %d (context_length)", i, b, n, trained)
			}
		}
	}
	return nil
}

func cells(r Request) int {
	n := len(r.Prefix)
	for _, b := range r.Branches {
		n += len(b.Tokens)
	}
	return n
}

// NewResults allocates the result slices for reqs.
func NewResults(reqs []Request) []Result {
	out := make([]Result, len(reqs))
	for i, r := range reqs {
		out[i] = make(Result, len(r.Branches))
		for b, br := range r.Branches {
			out[i][b] = make([]float64, len(br.Positions))
		}
	}
	return out
}

// job is a request being fed into the cache.
type job struct {
	req    int
	r      *Request
	seqs   []int32
	fedPre int       // prefix tokens fed
	branch int       // branch being fed
	fedBr  int       // tokens of that branch fed
	reads  [][][]int // reads[b][pos] -> indexes into Positions wanting pos
	cells  int       // cache cells it added (fewer than cells(*r) when shared)
}

func (j *job) done() bool { return j.fedPre == len(j.r.Prefix) && j.branch == len(j.r.Branches) }

// Planner turns requests into steps, packing several sequences into each
// decode: requests are admitted in order while sequence ids, cache cells
// and batch room remain, and a prompt shared by several branches is fed once
// with every branch's sequence id.
type Planner struct {
	reqs    []Request
	lim     Limits
	next    int
	active  []*job
	free    []int32
	used    int
	pending []int32 // released by the previous step
}

// NewPlanner plans reqs; call Validate first.
func NewPlanner(reqs []Request, lim Limits) *Planner {
	p := &Planner{reqs: reqs, lim: lim}
	for s := lim.MaxSeqs - 1; s >= 0; s-- {
		p.free = append(p.free, int32(s))
	}
	return p
}

// Next returns the next step, or false when all requests are planned. The
// caller must execute each step before asking for the next one.
func (p *Planner) Next() (Step, bool) {
	// Sequences released by the last step are free now. The lowest ids go
	// out first: llama.cpp splits a batch over separate caches fastest when
	// its sequence ids are consecutive.
	if len(p.pending) > 0 {
		p.free = append(p.free, p.pending...)
		slices.SortFunc(p.free, func(a, b int32) int { return int(b - a) })
	}
	p.pending = nil
	if p.next == len(p.reqs) && len(p.active) == 0 {
		return Step{}, false
	}
	var st Step
	budget := p.lim.BatchTokens
	for _, j := range p.active {
		budget = p.feed(j, &st, budget)
	}
	// Tokens fed in this step, for requests admitted whole to share. Cells
	// decoded in an earlier step are not shared: a sequence joins a cell
	// only in the batch that writes it.
	starts := trie{}
	for budget > 0 && p.next < len(p.reqs) {
		r := &p.reqs[p.next]
		need := len(r.Branches)
		if need > len(p.free) {
			break
		}
		// A request shares only when it is fed whole in this step, so it
		// is done with the cells it shares when they are released.
		add, share := cells(*r), false
		if p.lim.ShareStarts {
			if n := starts.added(r); n <= budget {
				add, share = n, true
			}
		}
		if !p.lim.Separate {
			if p.used+add > p.lim.Cells {
				break
			}
			if len(p.active) > 0 && p.lim.PackCells > 0 && p.used+add > p.lim.PackCells {
				break
			}
		}
		j := p.admit(p.next, add)
		p.next++
		if share {
			budget -= p.feedShared(j, &st, starts)
		} else {
			budget = p.feed(j, &st, budget)
		}
	}
	kept := p.active[:0]
	for _, j := range p.active {
		if j.done() {
			st.Release = append(st.Release, j.seqs...)
			p.pending = append(p.pending, j.seqs...)
			p.used -= j.cells
		} else {
			kept = append(kept, j)
		}
	}
	p.active = kept
	return st, true
}

func (p *Planner) admit(i, cells int) *job {
	r := &p.reqs[i]
	j := &job{req: i, r: r, cells: cells}
	for range r.Branches {
		j.seqs = append(j.seqs, p.free[len(p.free)-1])
		p.free = p.free[:len(p.free)-1]
	}
	j.reads = make([][][]int, len(r.Branches))
	for b, br := range r.Branches {
		j.reads[b] = make([][]int, len(r.Prefix)+len(br.Tokens))
		for k, pos := range br.Positions {
			j.reads[b][pos] = append(j.reads[b][pos], k)
		}
	}
	p.used += cells
	p.active = append(p.active, j)
	return j
}

// feed adds as many of j's tokens as the budget allows and returns what is
// left of the budget.
func (p *Planner) feed(j *job, st *Step, budget int) int {
	pre := len(j.r.Prefix)
	for budget > 0 && j.fedPre < pre {
		i := j.fedPre
		e := Entry{Token: j.r.Prefix[i], Pos: int32(i), Seqs: j.seqs}
		// The output at i predicts token i+1: of the prefix, or the first
		// token of each branch.
		for b := range j.r.Branches {
			j.addReads(&e, b, i)
		}
		st.Entries = append(st.Entries, e)
		j.fedPre++
		budget--
	}
	for budget > 0 && j.fedPre == pre && j.branch < len(j.r.Branches) {
		br := j.r.Branches[j.branch]
		if j.fedBr == len(br.Tokens) {
			j.branch++
			j.fedBr = 0
			continue
		}
		i := pre + j.fedBr
		e := Entry{Token: br.Tokens[j.fedBr], Pos: int32(i), Seqs: j.seqs[j.branch : j.branch+1]}
		j.addReads(&e, j.branch, i)
		st.Entries = append(st.Entries, e)
		j.fedBr++
		budget--
	}
	// A branch fed to its end moves on, so done() sees it without waiting
	// for another step.
	for j.fedPre == pre && j.branch < len(j.r.Branches) && j.fedBr == len(j.r.Branches[j.branch].Tokens) {
		j.branch++
		j.fedBr = 0
	}
	return budget
}

// addReads adds to e the reads branch b of j takes from the output at
// position i, which predicts the branch's token i+1.
func (j *job) addReads(e *Entry, b, i int) {
	next, ok := tokenAt(j.r.Prefix, j.r.Branches[b].Tokens, i+1)
	if !ok {
		return
	}
	for _, k := range j.reads[b][i+1] {
		e.Reads = append(e.Reads, Read{Req: j.req, Branch: b, Index: k, Next: next})
	}
}

// feedShared feeds all of j, joining each token that continues one
// already in st the same way (the same token after the same tokens) to that
// entry instead of adding one, and returns the entries it added.
func (p *Planner) feedShared(j *job, st *Step, starts trie) int {
	before := len(st.Entries)
	eachToken(j.r, func(parent int, tok int32, i, b int) int {
		k := trieKey{parent, tok}
		e, ok := starts[k]
		if !ok {
			e = len(st.Entries)
			starts[k] = e
			st.Entries = append(st.Entries, Entry{Token: tok, Pos: int32(i)})
		}
		ent := &st.Entries[e]
		// Clip: an entry's ids may alias another entry's or a job's.
		if b == prefix {
			ent.Seqs = append(slices.Clip(ent.Seqs), j.seqs...)
			for b := range j.r.Branches {
				j.addReads(ent, b, i)
			}
		} else {
			ent.Seqs = append(slices.Clip(ent.Seqs), j.seqs[b])
			j.addReads(ent, b, i)
		}
		return e
	})
	j.fedPre, j.branch, j.fedBr = len(j.r.Prefix), len(j.r.Branches), 0
	return len(st.Entries) - before
}

// prefix is eachToken's branch for a token of the prompt all branches share.
const prefix = -1

// eachToken visits r's tokens in the order the planner feeds them: the
// prefix, then each branch after it. visit gets the cell of the token
// before (root for the first), the token, its position and its branch (or
// prefix), and returns the token's cell. trie.added and feedShared walk
// requests through it, so the cells one counts are the ones the other adds.
func eachToken(r *Request, visit func(parent int, tok int32, pos, branch int) int) {
	parent := root
	for i, tok := range r.Prefix {
		parent = visit(parent, tok, i, prefix)
	}
	for b, br := range r.Branches {
		cell := parent
		for t, tok := range br.Tokens {
			cell = visit(cell, tok, len(r.Prefix)+t, b)
		}
	}
}

// trie maps a token and the entry of the token before it (root at position
// 0) to the entry that holds it in the step being planned.
type trie map[trieKey]int

type trieKey struct {
	parent int
	token  int32
}

const root = -1

// added counts the cells r would add to the step: its tokens not already
// there, counting once those its own branches share.
func (t trie) added(r *Request) int {
	mine := map[trieKey]int{}
	eachToken(r, func(parent int, tok int32, _, _ int) int {
		k := trieKey{parent, tok}
		if e, ok := t[k]; ok {
			return e
		}
		if e, ok := mine[k]; ok {
			return e
		}
		mine[k] = root - 1 - len(mine) // below root: never an entry of the step
		return mine[k]
	})
	return len(mine)
}

// tokenAt returns token i of prefix+branch.
func tokenAt(prefix, branch []int32, i int) (int32, bool) {
	if i < len(prefix) {
		return prefix[i], true
	}
	if i-len(prefix) < len(branch) {
		return branch[i-len(prefix)], true
	}
	return 0, false
}

// PlannedTokens is how many tokens the planner feeds the engine for reqs
// under lim: what Limits.ShareStarts saves, counted by the planner itself.
func PlannedTokens(reqs []Request, lim Limits) int {
	n := 0
	eachEntry(reqs, lim, func(Entry) { n++ })
	return n
}

// eachEntry calls fn with every token the planner feeds for reqs under lim,
// step after step.
func eachEntry(reqs []Request, lim Limits, fn func(Entry)) {
	p := NewPlanner(reqs, lim)
	for {
		st, ok := p.Next()
		if !ok {
			return
		}
		for _, e := range st.Entries {
			fn(e)
		}
	}
}
