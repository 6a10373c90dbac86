package hftok

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/udgamlabs/udgam-ci/internal/hfref"
)

// loaded parses each family's tokenizer.json once per test binary (Gemma
// 3's is 33 MB).
var loaded struct {
	sync.Mutex
	toks map[string]*Tokenizer
}

func family(t *testing.T, name string) (*Tokenizer, string) {
	t.Helper()
	dir := hfref.Dir(t, name)
	loaded.Lock()
	defer loaded.Unlock()
	if tok, ok := loaded.toks[name]; ok {
		return tok, dir
	}
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.toks == nil {
		loaded.toks = map[string]*Tokenizer{}
	}
	loaded.toks[name] = tok
	return tok, dir
}

// compare encodes texts with tok and checks them id for id against want,
// reporting the first difference of each text (at most 10 texts).
func compare(t *testing.T, tok *Tokenizer, texts []string, want [][]int32) (same int) {
	t.Helper()
	bad := 0
	for i, text := range texts {
		got, err := tok.Encode(text)
		if err != nil {
			t.Errorf("Encode(%q): %v", text, err)
			continue
		}
		if slices.Equal(got, want[i]) {
			same++
			continue
		}
		if bad++; bad <= 10 {
			t.Errorf("text %d %q: %s", i, text, firstDiff(got, want[i]))
		}
	}
	return same
}

func firstDiff(got, want []int32) string {
	n := 0
	for n < len(got) && n < len(want) && got[n] == want[n] {
		n++
	}
	return fmt.Sprintf("first difference at id %d: got %v, transformers.js %v", n,
		got[n:min(len(got), n+6)], want[n:min(len(want), n+6)])
}

// TestFamiliesMatchTransformersJS is the main check: every family's real
// tokenizer.json on the shared text set and on seeded random mixtures of
// its characters and words, id for id against transformers.js (one node
// call a family).
func TestFamiliesMatchTransformersJS(t *testing.T) {
	texts := hfref.Texts()
	mixes := mixtures(texts, 150)
	for _, name := range hfref.Families() {
		t.Run(name, func(t *testing.T) {
			tok, dir := family(t, name)
			want := hfref.Encode(t, dir, append(slices.Clone(texts), mixes...))
			same := compare(t, tok, texts, want[:len(texts)])
			t.Logf("%s: %d of %d texts give transformers.js's ids", name, same, len(texts))
			same = compare(t, tok, mixes, want[len(texts):])
			t.Logf("%s: %d of %d random mixtures give transformers.js's ids", name, same, len(mixes))
		})
	}
}

// mixtures makes n seeded random texts from the set's words, space runs
// and characters.
func mixtures(texts []string, n int) []string {
	var runes []rune
	var words []string
	for _, s := range texts {
		runes = append(runes, []rune(s)...)
		words = append(words, strings.FieldsFunc(s, func(r rune) bool { return r == ' ' })...)
	}
	rng := rand.New(rand.NewPCG(19, 2026))
	var mixes []string
	for range n {
		var b strings.Builder
		for range 1 + rng.IntN(16) {
			switch rng.IntN(4) {
			case 0:
				b.WriteString(words[rng.IntN(len(words))])
			case 1:
				b.WriteString(strings.Repeat(" ", rng.IntN(4)))
			default:
				for range 1 + rng.IntN(4) {
					b.WriteRune(runes[rng.IntN(len(runes))])
				}
			}
		}
		mixes = append(mixes, b.String())
	}
	return mixes
}
