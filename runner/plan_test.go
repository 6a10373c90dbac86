package runner

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// fakeLogProb is a deterministic function of the whole history, so a read
// routed to the wrong sequence, position or branch gives a different value.
func fakeLogProb(history []int32, next int32) float64 {
	h := fnv.New64a()
	for _, t := range append(slices.Clone(history), next) {
		fmt.Fprint(h, t, ",")
	}
	return -float64(h.Sum64()%100000) / 1000
}

// simulate executes a plan the way llama.cpp's KV cache does: each sequence
// id holds a history; a token tagged with several ids extends all of them.
func simulate(t *testing.T, reqs []Request, lim Limits) []Result {
	t.Helper()
	if err := Validate(reqs, lim, 1000); err != nil {
		t.Fatal(err)
	}
	res := NewResults(reqs)
	hist := map[int32][]int32{}
	// cells[c] are the sequences cell c belongs to; it is free when none.
	var cells []map[int32]bool
	live := func() int {
		n := 0
		for _, c := range cells {
			if len(c) > 0 {
				n++
			}
		}
		return n
	}
	p := NewPlanner(reqs, lim)
	for steps := 0; ; steps++ {
		if steps > 100000 {
			t.Fatal("planner does not terminate")
		}
		st, ok := p.Next()
		if !ok {
			break
		}
		if len(st.Entries) == 0 || len(st.Entries) > lim.BatchTokens {
			t.Fatalf("step %d has %d tokens, batch is %d", steps, len(st.Entries), lim.BatchTokens)
		}
		for _, e := range st.Entries {
			for _, s := range e.Seqs {
				if s < 0 || int(s) >= lim.MaxSeqs {
					t.Fatalf("sequence id %d out of range", s)
				}
				if int(e.Pos) != len(hist[s]) {
					t.Fatalf("sequence %d: position %d after %d tokens", s, e.Pos, len(hist[s]))
				}
				hist[s] = append(hist[s], e.Token)
			}
			cell := map[int32]bool{}
			for _, s := range e.Seqs {
				if cell[s] {
					t.Fatalf("step %d: sequence %d twice on one token", steps, s)
				}
				cell[s] = true
			}
			cells = append(cells, cell)
			h0 := hist[e.Seqs[0]]
			for _, s := range e.Seqs[1:] {
				if !slices.Equal(hist[s], h0) {
					t.Fatalf("coupled sequences %d and %d have diverged", e.Seqs[0], s)
				}
			}
			for _, r := range e.Reads {
				res[r.Req][r.Branch][r.Index] = fakeLogProb(h0, r.Next)
			}
		}
		if !lim.Separate && live() > lim.Cells {
			t.Fatalf("step %d: %d cells in use, the cache has %d", steps, live(), lim.Cells)
		}
		for _, s := range st.Release {
			delete(hist, s)
			for _, c := range cells {
				delete(c, s)
			}
		}
	}
	if len(hist) != 0 {
		t.Fatalf("%d sequences never released", len(hist))
	}
	return res
}

func direct(reqs []Request) []Result {
	res := NewResults(reqs)
	for i, r := range reqs {
		for b, br := range r.Branches {
			seq := append(slices.Clone(r.Prefix), br.Tokens...)
			for k, p := range br.Positions {
				res[i][b][k] = fakeLogProb(seq[:p], seq[p])
			}
		}
	}
	return res
}

func randomRequests(rng *rand.Rand, n int) []Request {
	tok := func(k int) []int32 {
		s := make([]int32, k)
		for i := range s {
			s[i] = int32(rng.IntN(1000))
		}
		return s
	}
	// Some requests and branches begin as an earlier one does, so that
	// sharing starts (Limits.ShareStarts) is exercised.
	like := func(prev []int32, k int) []int32 {
		s := tok(k)
		if len(prev) > 0 && rng.IntN(2) == 0 {
			copy(s, prev[:rng.IntN(len(prev)+1)])
		}
		return s
	}
	var reqs []Request
	var prevPrefix []int32
	for range n {
		r := Request{Prefix: like(prevPrefix, rng.IntN(40))}
		prevPrefix = r.Prefix
		var prevBranch []int32
		for range 1 + rng.IntN(4) {
			br := Branch{Tokens: like(prevBranch, rng.IntN(30))}
			prevBranch = br.Tokens
			total := len(r.Prefix) + len(br.Tokens)
			for p := 1; p < total; p++ {
				if rng.IntN(3) > 0 {
					br.Positions = append(br.Positions, p)
				}
			}
			r.Branches = append(r.Branches, br)
		}
		reqs = append(reqs, r)
	}
	return reqs
}

func TestPlannerRoutesEveryRead(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := randomRequests(rng, 200)
	want := direct(reqs)
	flat := Unshare(reqs)
	wantFlat := direct(flat)
	for _, lim := range []Limits{
		{BatchTokens: 1, MaxSeqs: 4, Cells: 200},
		{BatchTokens: 7, MaxSeqs: 4, Cells: 200},
		{BatchTokens: 64, MaxSeqs: 8, Cells: 256},
		{BatchTokens: 512, MaxSeqs: 32, Cells: 4096},
		{BatchTokens: 4096, MaxSeqs: 256, Cells: 100000},
		{BatchTokens: 512, MaxSeqs: 32, Cells: 4096, PackCells: 100},
		{BatchTokens: 512, MaxSeqs: 4, Cells: 100, Separate: true},
		{BatchTokens: 1, MaxSeqs: 4, Cells: 200, ShareStarts: true},
		{BatchTokens: 64, MaxSeqs: 8, Cells: 256, ShareStarts: true},
		{BatchTokens: 512, MaxSeqs: 32, Cells: 4096, ShareStarts: true},
		{BatchTokens: 512, MaxSeqs: 32, Cells: 4096, PackCells: 100, ShareStarts: true},
		{BatchTokens: 512, MaxSeqs: 32, Cells: 150, ShareStarts: true},
		{BatchTokens: 4096, MaxSeqs: 256, Cells: 100000, ShareStarts: true},
	} {
		t.Run(fmt.Sprintf("batch%d_seqs%d_cells%d_pack%d_share%v", lim.BatchTokens, lim.MaxSeqs, lim.Cells, lim.PackCells, lim.ShareStarts), func(t *testing.T) {
			reqs, want := reqs, want
			if lim.Separate {
				reqs, want = flat, wantFlat
			}
			got := simulate(t, reqs, lim)
			for i := range want {
				for b := range want[i] {
					if !slices.Equal(got[i][b], want[i][b]) {
						t.Fatalf("request %d branch %d: got %v, want %v", i, b, got[i][b], want[i][b])
					}
				}
			}
		})
	}
}

func TestPlannerSharesPrefixOnce(t *testing.T) {
	t.Parallel()
	prefix := []int32{1, 2, 3, 4, 5}
	req := Request{Prefix: prefix}
	for c := range 4 {
		req.Branches = append(req.Branches, Branch{Tokens: []int32{int32(10 + c), 20}, Positions: []int{5, 6}})
	}
	p := NewPlanner([]Request{req}, Limits{BatchTokens: 512, MaxSeqs: 8, Cells: 64})
	st, _ := p.Next()
	if got, want := len(st.Entries), len(prefix)+4*2; got != want {
		t.Fatalf("evaluated %d tokens, want %d (prefix once, then each branch)", got, want)
	}
	if n := len(st.Entries[0].Seqs); n != 4 {
		t.Fatalf("prefix token carries %d sequence ids, want 4", n)
	}
	outs := 0
	for _, e := range st.Entries {
		if len(e.Reads) > 0 {
			outs++
		}
	}
	// Last prefix token (read by all four branches) and each branch's first token.
	if outs != 5 {
		t.Fatalf("%d tokens ask for logits, want 5", outs)
	}
	if len(st.Release) != 4 {
		t.Fatalf("released %d sequences, want 4", len(st.Release))
	}
}

// Two items whose prompts begin alike and whose choices begin alike: with
// ShareStarts each distinct start is one token, and every read is the same.
func TestPlannerSharesStarts(t *testing.T) {
	t.Parallel()
	item := func(last int32) Request {
		r := Request{Prefix: []int32{1, 2, 3, last}}
		for _, c := range []int32{8, 9} {
			r.Branches = append(r.Branches, Branch{Tokens: []int32{7, c}, Positions: []int{4, 5}})
		}
		return r
	}
	reqs := []Request{item(4), item(5)}
	for _, tt := range []struct {
		share bool
		want  int
	}{
		{false, 2 * (4 + 2*2)},
		// 1 2 3 once, 4 and 5, then 7 once and 8 and 9 after each prompt.
		{true, 3 + 2 + 2*3},
	} {
		lim := Limits{BatchTokens: 512, MaxSeqs: 8, Cells: 64, ShareStarts: tt.share}
		st, _ := NewPlanner(reqs, lim).Next()
		if len(st.Entries) != tt.want {
			t.Errorf("share %v: evaluated %d tokens, want %d", tt.share, len(st.Entries), tt.want)
		}
		if n := len(st.Entries[0].Seqs); tt.share && n != 4 {
			t.Errorf("share %v: the first token carries %d sequence ids, want all 4", tt.share, n)
		}
		got, want := simulate(t, reqs, lim), direct(reqs)
		for i := range want {
			for b := range want[i] {
				if !slices.Equal(got[i][b], want[i][b]) {
					t.Fatalf("share %v: request %d branch %d: got %v, want %v", tt.share, i, b, got[i][b], want[i][b])
				}
			}
		}
	}
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	lim := Limits{BatchTokens: 8, MaxSeqs: 2, Cells: 10}
	long := make([]int32, 11)
	cases := []struct {
		name string
		req  Request
	}{
		{"no branches", Request{Prefix: []int32{1}}},
		{"too many branches", Request{Branches: make([]Branch, 3)}},
		{"longer than context", Request{Branches: []Branch{{Tokens: long}}}},
		{"token out of range", Request{Branches: []Branch{{Tokens: []int32{1, 100}}}}},
		{"negative token", Request{Prefix: []int32{-1}, Branches: []Branch{{}}}},
		{"position zero", Request{Branches: []Branch{{Tokens: []int32{1, 2}, Positions: []int{0}}}}},
		{"position past end", Request{Branches: []Branch{{Tokens: []int32{1, 2}, Positions: []int{2}}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := Validate([]Request{c.req}, lim, 100); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestCheckTrainingContext(t *testing.T) {
	t.Parallel()
	reqs := []Request{{Prefix: make([]int32, 6), Branches: []Branch{{Tokens: make([]int32, 2)}, {Tokens: make([]int32, 4)}}}}
	if err := CheckTrainingContext(reqs, 10); err != nil {
		t.Errorf("10 tokens in a context of 10: %v", err)
	}
	if err := CheckTrainingContext(reqs, 0); err != nil {
		t.Errorf("unknown context: %v", err)
	}
	err := CheckTrainingContext(reqs, 9)
	if err == nil || !strings.Contains(err.Error(), "request 0 branch 1: 10 tokens, longer than the model's training context of 9") {
		t.Errorf("10 tokens in a context of 9: %v", err)
	}
}

func TestUnshareReshare(t *testing.T) {
	t.Parallel()
	reqs := randomRequests(rand.New(rand.NewPCG(3, 4)), 30)
	flat := Unshare(reqs)
	for _, r := range flat {
		if len(r.Prefix) != 0 || len(r.Branches) != 1 {
			t.Fatal("unshared request still shares")
		}
	}
	got := Reshare(reqs, direct(flat))
	want := direct(reqs)
	for i := range want {
		for b := range want[i] {
			if !slices.Equal(got[i][b], want[i][b]) {
				t.Fatalf("request %d branch %d differs after unshare", i, b)
			}
		}
	}
}

func TestPlannerPackCells(t *testing.T) {
	t.Parallel()
	long := Request{Branches: []Branch{{Tokens: make([]int32, 300), Positions: []int{1}}}}
	short := Request{Branches: []Branch{{Tokens: make([]int32, 50), Positions: []int{1}}}}
	p := NewPlanner([]Request{short, short, long, short}, Limits{BatchTokens: 512, MaxSeqs: 8, Cells: 1024, PackCells: 128})
	st, _ := p.Next()
	// Two short requests pack (100 cells); the long one waits for an empty cache.
	if len(st.Entries) != 100 {
		t.Fatalf("first step has %d tokens, want 100", len(st.Entries))
	}
	st, _ = p.Next()
	if len(st.Entries) != 300 {
		t.Fatalf("second step has %d tokens, want the long request alone (300)", len(st.Entries))
	}
}
