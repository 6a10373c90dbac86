package probes

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// recorder wraps a model and keeps every request it is asked to score.
type recorder struct {
	runner.Model
	calls [][]runner.Request
	fail  int // fail the call with this 1-based number; 0 never
}

func (r *recorder) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	r.calls = append(r.calls, reqs)
	if len(r.calls) == r.fail {
		return nil, errors.New("engine failed")
	}
	return r.Model.Score(ctx, reqs)
}

func (r *recorder) items() int {
	n := 0
	for _, c := range r.calls {
		n += len(c)
	}
	return n
}

func scoreAll(t *testing.T, m runner.Model, opt ScoreOptions, items []Item) []runfile.Item {
	t.Helper()
	var recs []runfile.Item
	err := Score(context.Background(), m, items, opt, func(r runfile.Item) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// The bigram model's log-probabilities are a table lookup, so every choice's
// score can be computed here by hand: log p of each byte of " "+choice given
// the byte before it, the first one given the prompt's last byte.
func TestScoreMatchesBigramArithmetic(t *testing.T) {
	t.Parallel()
	m := testmodel.RandomBigram(11)
	items := generate(t, Options{Types: TypesAll, Per: 100, Seed: 2026})
	for _, addBOS := range []bool{true, false} {
		rec := &recorder{Model: m}
		recs := scoreAll(t, rec, ScoreOptions{AddBOS: addBOS, BOS: testmodel.BOS}, items)
		if len(recs) != len(items) {
			t.Fatalf("%d records for %d items", len(recs), len(items))
		}
		for i, r := range recs {
			it := items[i]
			if r.ID != it.ID || r.Type != it.Type || r.Level != it.Level {
				t.Fatalf("record %d is %s %s/%d, want item %s", i, r.ID, r.Type, r.Level, it.ID)
			}
			best, bestLP, tokens := -1, math.Inf(-1), 0
			for c, choice := range it.Choices {
				cont := " " + choice
				prev := int32(it.Prompt[len(it.Prompt)-1])
				var want float64
				for j := 0; j < len(cont); j++ {
					want += m.LogProb(prev, int32(cont[j]))
					prev = int32(cont[j])
				}
				if math.Abs(r.Logprobs[c]-want) > 1e-9 {
					t.Fatalf("%s choice %q: logprob %v, arithmetic %v", it.ID, choice, r.Logprobs[c], want)
				}
				if math.Abs(r.Norm[c]-want/float64(len(cont))) > 1e-9 {
					t.Fatalf("%s choice %q: norm %v, want %v", it.ID, choice, r.Norm[c], want/float64(len(cont)))
				}
				if want > bestLP {
					best, bestLP = c, want
				}
				tokens += len(cont)
			}
			answer := slices.Index(it.Choices, it.Answer)
			if r.Pred != best || r.Answer != answer || r.Correct != (best == answer) || r.Tokens != tokens {
				t.Fatalf("%s: pred %d answer %d correct %v tokens %d, want %d %d %v %d", it.ID, r.Pred, r.Answer, r.Correct, r.Tokens, best, answer, best == answer, tokens)
			}
			if err := r.Validate(); err != nil {
				t.Fatal(err)
			}
		}
		// Many items go to the engine in each call so it can pack them.
		if want := (len(items) + DefaultBatch - 1) / DefaultBatch; len(rec.calls) != want {
			t.Errorf("%d Score calls for %d items, want %d", len(rec.calls), len(items), want)
		}
	}
}

// mergingTokenizer turns ": " into one token (300) as a BPE vocabulary
// might; a scorer that tokenised prompt and choice together would see it.
type mergingTokenizer struct{ runner.Model }

func (m mergingTokenizer) Tokenize(text string) ([]int32, error) {
	var out []int32
	for i := 0; i < len(text); i++ {
		if strings.HasPrefix(text[i:], ": ") {
			out = append(out, 300)
			i++
			continue
		}
		out = append(out, int32(text[i]))
	}
	return out, nil
}

func bytesOf(s string) []int32 {
	out := make([]int32, len(s))
	for i := range s {
		out[i] = int32(s[i])
	}
	return out
}

func TestRequestStructure(t *testing.T) {
	t.Parallel()
	it := Item{ID: "x", Prompt: "Question: What is 2 + 2?\nAnswer:", Answer: "4", Choices: []string{"4", "5", "40"}}
	tok := mergingTokenizer{testmodel.RandomBigram(1)}
	tests := []struct {
		name   string
		addBOS bool
		prefix []int32
	}{
		{"bos", true, append([]int32{testmodel.BOS}, append([]int32{'Q', 'u', 'e', 's', 't', 'i', 'o', 'n', 300}, bytesOf("What is 2 + 2?\nAnswer:")...)...)},
		{"no bos", false, append([]int32{'Q', 'u', 'e', 's', 't', 'i', 'o', 'n', 300}, bytesOf("What is 2 + 2?\nAnswer:")...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := BuildRequest(tok, &it, tc.addBOS, testmodel.BOS)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(req.Prefix, tc.prefix) {
				t.Fatalf("prefix %v, want %v", req.Prefix, tc.prefix)
			}
			if len(req.Branches) != len(it.Choices) {
				t.Fatalf("%d branches for %d choices", len(req.Branches), len(it.Choices))
			}
			for b, c := range it.Choices {
				br := req.Branches[b]
				// " "+choice on its own: the space is a token of its own,
				// never merged with the prompt's final ":".
				if want := bytesOf(" " + c); !slices.Equal(br.Tokens, want) {
					t.Errorf("choice %q: tokens %v, want %v", c, br.Tokens, want)
				}
				var pos []int
				for i := range br.Tokens {
					pos = append(pos, len(tc.prefix)+i)
				}
				if !slices.Equal(br.Positions, pos) {
					t.Errorf("choice %q: positions %v, want %v", c, br.Positions, pos)
				}
			}
		})
	}
}

func TestBuildRequestErrors(t *testing.T) {
	t.Parallel()
	tok := testmodel.RandomBigram(1)
	empty := Item{ID: "e", Prompt: "", Answer: "a", Choices: []string{"a", "b"}}
	if _, err := BuildRequest(tok, &empty, false, -1); err == nil || !strings.Contains(err.Error(), "item e") {
		t.Errorf("empty prompt without BOS: err %v", err)
	}
}

func TestTies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		xs   []float64
		pred int
		tie  bool
	}{
		{[]float64{-1, -2}, 0, false},
		{[]float64{-2, -1, -3}, 1, false},
		{[]float64{-1, -1}, 0, true},
		{[]float64{-3, -1, -2, -1}, 1, true},
		{[]float64{-1, -1, 0}, 2, false},
	}
	for _, tc := range tests {
		if pred, tie := runfile.Pick(tc.xs); pred != tc.pred || tie != tc.tie {
			t.Errorf("runfile.Pick(%v) = %d, %v; want %d, %v", tc.xs, pred, tie, tc.pred, tc.tie)
		}
	}
	// Two identical choices cannot be loaded, but the same bytes after
	// different prompts can score equally: a model with a constant table
	// makes every single-token choice tie, and the first wins.
	flat := make([][]float64, testmodel.ByteVocab)
	for i := range flat {
		flat[i] = make([]float64, testmodel.ByteVocab)
	}
	m, err := testmodel.NewBigram(flat)
	if err != nil {
		t.Fatal(err)
	}
	items := []Item{{ID: "t", Type: "compare", Level: 1, Prompt: "Question: Which?\nAnswer:", Answer: "b", Choices: []string{"a", "b"}}}
	recs := scoreAll(t, m, ScoreOptions{}, items)
	if r := recs[0]; r.Pred != 0 || !r.Tie || r.Correct {
		t.Errorf("flat model: pred %d tie %v correct %v, want 0 true false", r.Pred, r.Tie, r.Correct)
	}
}
