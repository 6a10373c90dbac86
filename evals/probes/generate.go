// Package probes is the Probe Suite: generated questions with one exact
// answer, scored by the log-probability a model gives each choice.
package probes

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/udgamlabs/udgam-ci/internal/atomicfile"
)

// Item is one question. Answer is the text of the right choice.
type Item struct {
	ID      string   `json:"id"`
	Type    string   `json:"type"`
	Level   int      `json:"level"`
	Prompt  string   `json:"prompt"`
	Answer  string   `json:"answer"`
	Choices []string `json:"choices"`
	// Variant names the prompt variant (VariantItems); empty for the
	// published template, so published items encode as they always have.
	Variant string `json:"variant,omitempty"`
}

// AnswerIndex is the position of the answer among the choices, or -1.
func (it *Item) AnswerIndex() int { return slices.Index(it.Choices, it.Answer) }

// Type sets for Options.Types.
const (
	TypesCore     = "core"
	TypesFrontier = "frontier"
	TypesAll      = "all"
)

// DefaultSeed and DefaultPer make the core set that is embedded and scored
// by default.
const (
	DefaultSeed = 2026
	DefaultPer  = 100
)

// Options choose what Generate makes.
type Options struct {
	Types string // core, frontier or all
	Per   int    // at most this many items per type and level
	Seed  int64
}

// CoreTypes lists the scored types in output order.
func CoreTypes() []string { return typeNames(false) }

// FrontierTypes lists the types that are generated but not in the score.
func FrontierTypes() []string { return typeNames(true) }

func typeNames(frontier bool) []string {
	var out []string
	for _, t := range suite {
		if t.frontier == frontier {
			out = append(out, t.typ)
		}
	}
	return out
}

// maxTries bounds the draws per wanted item of a sampled level; a level
// whose space is smaller than Per keeps what it found.
const maxTries = 50

// Generate makes the items: for each type and level, up to Per items with
// distinct prompts, in a fixed order that depends only on the seed.
func Generate(opts Options) ([]Item, error) {
	if opts.Per < 1 {
		return nil, fmt.Errorf("generate probes: per must be at least 1, got %d", opts.Per)
	}
	var items []Item
	seen := map[string]bool{}
	for _, t := range suite {
		switch opts.Types {
		case TypesCore:
			if t.frontier {
				continue
			}
		case TypesFrontier:
			if !t.frontier {
				continue
			}
		case TypesAll:
		default:
			return nil, fmt.Errorf("generate probes: types %q, want core, frontier or all", opts.Types)
		}
		for li, lv := range t.levels {
			items = appendLevel(items, seen, t.typ, li+1, lv, opts)
		}
	}
	return items, nil
}

func appendLevel(items []Item, seen map[string]bool, typ string, lvl int, lv level, opts Options) []Item {
	r := newRNG(streamSeed(opts.Seed, typ, lvl))
	next := func() (question, bool) { return lv.sample(r), true }
	tries := opts.Per * maxTries
	if lv.all != nil {
		qs := lv.all(r)
		shuffle(r, qs)
		next = func() (question, bool) {
			if len(qs) == 0 {
				return question{}, false
			}
			q := qs[0]
			qs = qs[1:]
			return q, true
		}
	}
	n := 0
	for ; n < opts.Per && tries > 0; tries-- {
		q, ok := next()
		if !ok {
			break
		}
		prompt := "Question: " + q.text + "\nAnswer:"
		if seen[prompt] || slices.Contains(q.wrong, q.answer) || hasDuplicate(q.wrong) {
			continue
		}
		seen[prompt] = true
		choices := append([]string{q.answer}, q.wrong...)
		shuffle(r, choices)
		items = append(items, Item{
			ID:      fmt.Sprintf("pea-%s-%d-%d", typ, lvl, n),
			Type:    typ,
			Level:   lvl,
			Prompt:  prompt,
			Answer:  q.answer,
			Choices: choices,
		})
		n++
	}
	return items
}

func hasDuplicate(s []string) bool {
	for i := range s {
		if slices.Contains(s[i+1:], s[i]) {
			return true
		}
	}
	return false
}

// Encode writes items as JSON Lines in the field order of Item. HTML
// escaping is off so "×" and "<" read as themselves.
func Encode(w io.Writer, items []Item) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range items {
		if err := enc.Encode(&items[i]); err != nil {
			return fmt.Errorf("encode item %s: %w", items[i].ID, err)
		}
	}
	return nil
}

// WriteFile writes items to path atomically: readers never see half a file.
func WriteFile(path string, items []Item) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Encode(w, items) })
}
