package hftok

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/udgamlabs/udgam-ci/internal/tokjson"
)

// model is a tokenizer.json model: it turns one pre-token into ids.
type model interface {
	tokenize(w string, out []int32) ([]int32, error)
	id(token string) (int32, bool) // the vocabulary's id for a token
	size() int                     // the vocabulary's size, as tokenizers counts it
}

func parseModel(m json.RawMessage) (model, error) {
	typ, err := tokjson.TypeOf(m)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "BPE":
		return parseBPE(m)
	case "Unigram":
		return parseUnigram(m)
	}
	return nil, fmt.Errorf("type %q is not implemented (BPE and Unigram are)", typ)
}

// bpe is tokenizers' BPE model.
type bpe struct {
	vocab       map[string]int32
	merges      map[uint64]merge // key: pairKey(left, right)
	unk         int32            // -1: no unk token
	fuseUnk     bool
	byteFall    bool
	ignoreMerge bool
	prefix      string // continuing_subword_prefix
	suffix      string // end_of_word_suffix
}

type merge struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func (b *bpe) id(token string) (int32, bool) {
	id, ok := b.vocab[token]
	return id, ok
}

func (b *bpe) size() int { return len(b.vocab) }

func parseBPE(m json.RawMessage) (*bpe, error) {
	j, err := tokjson.ParseModel(m)
	if err != nil {
		return nil, fmt.Errorf("BPE: %w", err)
	}
	var vocab map[string]int32
	if !tokjson.IsNull(j.Vocab) { // none: every merge and the unk_token are refused below
		if err := json.Unmarshal(j.Vocab, &vocab); err != nil {
			return nil, fmt.Errorf("BPE: vocab: %w", err)
		}
	}
	if j.Dropout != nil && *j.Dropout != 0 {
		return nil, fmt.Errorf("BPE: dropout %v is not implemented (it makes encoding random)", *j.Dropout)
	}
	b := &bpe{vocab: vocab, unk: -1, fuseUnk: j.FuseUnk, byteFall: j.ByteFallback, ignoreMerge: j.IgnoreMerges}
	if j.ContinuingSubwordPrefix != nil {
		b.prefix = *j.ContinuingSubwordPrefix
	}
	if j.EndOfWordSuffix != nil {
		b.suffix = *j.EndOfWordSuffix
	}
	if j.UnkToken != nil {
		id, ok := b.vocab[*j.UnkToken]
		if !ok {
			return nil, fmt.Errorf("BPE: unk_token %q is not in the vocabulary", *j.UnkToken)
		}
		b.unk = id
	}
	pairs, err := tokjson.ParseMerges(j.Merges)
	if err != nil {
		return nil, fmt.Errorf("BPE: %w", err)
	}
	b.merges = make(map[uint64]merge, len(pairs))
	for i, p := range pairs {
		l, lok := b.vocab[p[0]]
		r, rok := b.vocab[p[1]]
		if !lok || !rok {
			return nil, fmt.Errorf("BPE: merge %d (%q %q): a part is not in the vocabulary", i, p[0], p[1])
		}
		if !strings.HasPrefix(p[1], b.prefix) {
			return nil, fmt.Errorf("BPE: merge %d (%q %q): the right part lacks the prefix %q", i, p[0], p[1], b.prefix)
		}
		id, ok := b.vocab[p[0]+p[1][len(b.prefix):]]
		if !ok {
			return nil, fmt.Errorf("BPE: merge %d (%q %q): the merged token is not in the vocabulary", i, p[0], p[1])
		}
		b.merges[pairKey(l, r)] = merge{rank: int32(i), id: id} // a repeated pair: the later rank, as tokenizers
	}
	return b, nil
}

// tokenize appends the ids of one pre-token, as tokenizers' BPE::tokenize:
// the whole word when ignore_merges and it is in the vocabulary; else one
// symbol a character (byte tokens <0xXX> for an unknown character under
// byte_fallback, else unk, fused when fuse_unk), then merges applied lowest
// rank first, leftmost first among equal ranks.
func (b *bpe) tokenize(w string, out []int32) ([]int32, error) {
	if w == "" {
		return out, nil
	}
	if b.ignoreMerge {
		if id, ok := b.vocab[w]; ok {
			return append(out, id), nil
		}
	}
	var syms []int32
	unk := false // an unk symbol is pending
	for i, r := range w {
		n := utf8.RuneLen(r)
		s := w[i : i+n]
		if i > 0 && b.prefix != "" {
			s = b.prefix + s
		}
		if i+n == len(w) && b.suffix != "" {
			s += b.suffix
		}
		if id, ok := b.vocab[s]; ok {
			if unk {
				syms, unk = append(syms, b.unk), false
			}
			syms = append(syms, id)
			continue
		}
		if b.byteFall {
			if ids, ok := byteTokens(b.vocab, s); ok {
				// tokenizers adds these before a pending unk.
				syms = append(syms, ids...)
				continue
			}
		}
		if b.unk < 0 {
			continue // tokenizers drops a character it cannot represent
		}
		if unk && !b.fuseUnk {
			syms = append(syms, b.unk)
		}
		unk = true
	}
	if unk {
		syms = append(syms, b.unk)
	}
	return append(out, b.mergeAll(syms)...), nil
}

// byteTokens gives the byte pieces <0xXX> of s (byte_fallback), or false
// when the vocabulary lacks one.
func byteTokens(vocab map[string]int32, s string) ([]int32, bool) {
	ids := make([]int32, len(s))
	for i := 0; i < len(s); i++ {
		id, ok := vocab[fmt.Sprintf("<0x%02X>", s[i])]
		if !ok {
			return nil, false
		}
		ids[i] = id
	}
	return ids, true
}

// mergeAll applies the merges to a word's symbols with a priority queue,
// as tokenizers' Word::merge_all.
func (b *bpe) mergeAll(ids []int32) []int32 {
	if len(ids) < 2 {
		return ids
	}
	type sym struct {
		id         int32
		prev, next int
		gone       bool
	}
	syms := make([]sym, len(ids))
	for i, id := range ids {
		syms[i] = sym{id: id, prev: i - 1, next: i + 1}
	}
	syms[len(syms)-1].next = -1
	q := &mergeQueue{}
	for i := 0; i+1 < len(ids); i++ {
		if m, ok := b.merges[pairKey(ids[i], ids[i+1])]; ok {
			q.items = append(q.items, queued{pos: i, rank: m.rank, id: m.id})
		}
	}
	heap.Init(q)
	for q.Len() > 0 {
		top := heap.Pop(q).(queued)
		s := &syms[top.pos]
		if s.gone || s.next < 0 {
			continue
		}
		right := syms[s.next]
		if m, ok := b.merges[pairKey(s.id, right.id)]; !ok || m.id != top.id {
			continue // stale: one side has merged since
		}
		s.id = top.id
		syms[s.next].gone = true
		s.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = top.pos
		}
		if s.prev >= 0 {
			if m, ok := b.merges[pairKey(syms[s.prev].id, s.id)]; ok {
				heap.Push(q, queued{pos: s.prev, rank: m.rank, id: m.id})
			}
		}
		if s.next >= 0 {
			if m, ok := b.merges[pairKey(s.id, syms[s.next].id)]; ok {
				heap.Push(q, queued{pos: top.pos, rank: m.rank, id: m.id})
			}
		}
	}
	out := ids[:0]
	for _, s := range syms {
		if !s.gone {
			out = append(out, s.id)
		}
	}
	return out
}

type queued struct {
	pos      int
	rank, id int32
}

// mergeQueue pops the lowest rank, then the leftmost position.
type mergeQueue struct{ items []queued }

func (q *mergeQueue) Len() int { return len(q.items) }
func (q *mergeQueue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.pos < b.pos
}
func (q *mergeQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *mergeQueue) Push(x any)    { q.items = append(q.items, x.(queued)) }
func (q *mergeQueue) Pop() any {
	n := len(q.items) - 1
	x := q.items[n]
	q.items = q.items[:n]
	return x
}
