package hftok

import (
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/udgamlabs/udgam-ci/internal/tokjson"
)

// unigram is tokenizers' Unigram model (SentencePiece's): the segmentation
// with the highest total score (Viterbi), an unknown character scoring the
// lowest piece score less 10, runs of unknown characters fused into one
// unk (tokenizers always fuses), then byte pieces <0xXX> for them under
// byte_fallback.
type unigram struct {
	pieces   []string
	scores   []float64
	ids      map[string]int32
	unk      int32 // -1: none
	byteFall bool
	maxLen   int // bytes in the longest piece
	unkScore float64
}

// unkPenalty is what tokenizers (and SentencePiece) subtract from the
// lowest score to score an unknown character.
const unkPenalty = 10.0

func parseUnigram(m json.RawMessage) (*unigram, error) {
	j, err := tokjson.ParseModel(m)
	if err != nil {
		return nil, fmt.Errorf("Unigram: %w", err)
	}
	var vocab [][]json.RawMessage
	if !tokjson.IsNull(j.Vocab) { // none: refused below as empty
		if err := json.Unmarshal(j.Vocab, &vocab); err != nil {
			return nil, fmt.Errorf("Unigram: vocab: %w", err)
		}
	}
	u := &unigram{ids: make(map[string]int32, len(vocab)), unk: -1, byteFall: j.ByteFallback}
	minScore := math.Inf(1)
	for i, e := range vocab {
		var piece string
		var score float64
		if len(e) != 2 || json.Unmarshal(e[0], &piece) != nil || json.Unmarshal(e[1], &score) != nil {
			return nil, fmt.Errorf("Unigram: vocab entry %d is not [piece, score]", i)
		}
		u.pieces = append(u.pieces, piece)
		u.scores = append(u.scores, score)
		u.ids[piece] = int32(i) // a repeated piece: the last id, as tokenizers
		u.maxLen = max(u.maxLen, len(piece))
		minScore = min(minScore, score)
	}
	if len(u.pieces) == 0 {
		return nil, fmt.Errorf("Unigram: empty vocabulary")
	}
	if j.UnkID != nil {
		if *j.UnkID < 0 || int(*j.UnkID) >= len(u.pieces) {
			return nil, fmt.Errorf("Unigram: unk_id %d is outside the vocabulary", *j.UnkID)
		}
		u.unk = *j.UnkID
	}
	u.unkScore = minScore - unkPenalty
	return u, nil
}

func (u *unigram) id(token string) (int32, bool) {
	id, ok := u.ids[token]
	return id, ok
}

func (u *unigram) size() int { return len(u.pieces) }

func (u *unigram) tokenize(w string, out []int32) ([]int32, error) {
	if w == "" {
		return out, nil
	}
	// best[e] is the best segmentation of w[:e]: its score, the start of its
	// last piece (-1: none yet) and that piece's id.
	type node struct {
		score float64
		start int
		id    int32
	}
	best := make([]node, len(w)+1)
	for i := range best {
		best[i].start = -1
	}
	for start := 0; start < len(w); {
		_, n := utf8.DecodeRuneInString(w[start:])
		here := best[start].score
		single := false
		// Every piece that starts here, shortest first (a trie's common
		// prefix search). Pieces are valid UTF-8, so one that ends inside a
		// character finds nothing.
		for end := start + 1; end <= len(w) && end-start <= u.maxLen; end++ {
			id, ok := u.ids[w[start:end]]
			if !ok {
				continue
			}
			if c := here + u.scores[id]; best[end].start < 0 || c > best[end].score {
				best[end] = node{score: c, start: start, id: id}
			}
			if end-start == n {
				single = true
			}
		}
		if !single {
			if u.unk < 0 {
				return out, fmt.Errorf("character %q is not in the Unigram vocabulary and there is no unk_id", w[start:start+n])
			}
			if c := here + u.unkScore; best[start+n].start < 0 || c > best[start+n].score {
				best[start+n] = node{score: c, start: start, id: u.unk}
			}
		}
		start += n
	}
	// Walk back; unknown runs are fused and keep their text.
	type tok struct {
		id   int32
		text string // for an unknown run
	}
	var rev []tok
	for end := len(w); end > 0; {
		nd := best[end]
		if nd.id == u.unk {
			if len(rev) > 0 && rev[len(rev)-1].id == u.unk && rev[len(rev)-1].text != "" {
				rev[len(rev)-1].text = w[nd.start:end] + rev[len(rev)-1].text
			} else {
				rev = append(rev, tok{id: u.unk, text: w[nd.start:end]})
			}
		} else {
			rev = append(rev, tok{id: nd.id})
		}
		end = nd.start
	}
	for i := len(rev) - 1; i >= 0; i-- {
		t := rev[i]
		if t.id != u.unk {
			out = append(out, t.id)
			continue
		}
		// tokenizers looks the fused text up as a piece, then falls back to
		// bytes, then to unk.
		if id, ok := u.ids[t.text]; ok {
			out = append(out, id)
			continue
		}
		if u.byteFall {
			if ids, ok := byteTokens(u.ids, t.text); ok {
				out = append(out, ids...)
				continue
			}
		}
		out = append(out, u.unk)
	}
	return out, nil
}
