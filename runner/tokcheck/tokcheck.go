// Package tokcheck compares the ids udgam-ci's scoring path gives texts
// (the converted GGUF, runner/textprep, llama.cpp) with an independent
// reading of the checkpoint's tokenizer.json (runner/hftok), and reports
// the first difference. It holds the built-in multilingual text set that
// `udgam-ci model check-tokenizer` and the tests against transformers.js
// share.
package tokcheck

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

//go:embed texts.json
var textsJSON []byte

// Texts returns the built-in text set: prose, numbers, whitespace, accents
// composed and decomposed, several scripts, emoji, code, URLs,
// contractions, special-token literals and probe prompts and choices.
func Texts() []string {
	var f struct{ Texts []string }
	if err := json.Unmarshal(textsJSON, &f); err != nil {
		panic(fmt.Sprintf("tokcheck: texts.json: %v", err)) // embedded; TestTexts catches it
	}
	return f.Texts
}

// Tokenizer turns text into ids (runner.Tokenizer, hftok's Encode).
type Tokenizer func(text string) ([]int32, error)

// Result is one check.
type Result struct {
	Texts  int `json:"texts"`
	Tokens int `json:"tokens"` // ids the scoring path gave, over all texts
	// Compared says whether an independent tokenizer was at hand, and
	// Reference which (set by the caller; empty: runner/hftok's reading).
	Compared  bool   `json:"compared"`
	Reference string `json:"reference,omitempty"`
	// Equal counts the texts whose ids agree (when Compared).
	Equal int `json:"equal"`
	// First is the first difference, nil when none.
	First *Difference `json:"first_difference,omitempty"`
	// Differences holds each differing text's first difference, in the
	// texts' order (First is the first of them).
	Differences []Difference `json:"differences,omitempty"`
}

// Difference is where the two sides first disagree.
type Difference struct {
	Text     int    `json:"text"`     // index into the texts
	Snippet  string `json:"snippet"`  // the text, clipped
	Position int    `json:"position"` // token position
	// Got is the scoring path's id there, Want the reference's; -1 where
	// that side has no more tokens. The pieces are the tokens' bytes.
	Got       int32  `json:"got"`
	Want      int32  `json:"want"`
	GotPiece  string `json:"got_piece"`
	WantPiece string `json:"want_piece"`
	// Error is set when a side failed on the text instead.
	Error string `json:"error,omitempty"`
}

// Check tokenizes every text with prod and, when ref is not nil, with ref,
// and records each text's first difference. piece gives a token's bytes for the
// report. An error from prod is a difference (the scoring path would
// refuse the text), as is one from ref.
func Check(texts []string, prod, ref Tokenizer, piece func(int32) string) Result {
	r := Result{Texts: len(texts), Compared: ref != nil}
	for i, text := range texts {
		got, gerr := prod(text)
		r.Tokens += len(got)
		if ref == nil {
			if gerr != nil {
				r.add(Difference{Text: i, Snippet: clip(text), Got: -1, Want: -1, Error: "udgam-ci: " + gerr.Error()})
			}
			continue
		}
		want, werr := ref(text)
		if gerr != nil || werr != nil {
			msg := ""
			if gerr != nil {
				msg = "udgam-ci: " + gerr.Error()
			} else {
				msg = "reference: " + werr.Error()
			}
			r.add(Difference{Text: i, Snippet: clip(text), Got: -1, Want: -1, Error: msg})
			continue
		}
		if slices.Equal(got, want) {
			r.Equal++
			continue
		}
		p := 0
		for p < len(got) && p < len(want) && got[p] == want[p] {
			p++
		}
		d := Difference{Text: i, Snippet: clip(text), Position: p, Got: -1, Want: -1}
		if p < len(got) {
			d.Got, d.GotPiece = got[p], piece(got[p])
		}
		if p < len(want) {
			d.Want, d.WantPiece = want[p], piece(want[p])
		}
		r.add(d)
	}
	return r
}

func (r *Result) add(d Difference) {
	r.Differences = append(r.Differences, d)
	r.First = &r.Differences[0]
}

// shownDifferences bounds the differences WriteText lists.
const shownDifferences = 20

// OK reports whether the check found nothing wrong.
func (r Result) OK() bool { return r.First == nil }

// WriteText prints the result for a person.
func (r Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d texts, %d tokens through the scoring path (GGUF, text preparation, llama.cpp)\n", r.Texts, r.Tokens)
	switch {
	case !r.Compared && r.First == nil:
		b.WriteString("no tokenizer.json at hand (give --tokenizer FILE): nothing to compare against\n")
	case r.Compared && r.First == nil:
		fmt.Fprintf(&b, "ids equal to %s on all %d texts\n", r.referenceName(), r.Texts)
	default:
		if r.Compared {
			fmt.Fprintf(&b, "ids equal on %d of %d texts\n", r.Equal, r.Texts)
		}
		diffs := r.Differences
		if len(diffs) == 0 { // a Result built by hand, with First only
			diffs = []Difference{*r.First}
		}
		for k, d := range diffs {
			if k == shownDifferences {
				fmt.Fprintf(&b, "... and %d more (--json lists them all)\n", len(diffs)-k)
				break
			}
			what := "difference"
			if k == 0 {
				what = "first difference"
			}
			fmt.Fprintf(&b, "%s: text %d %s", what, d.Text, strconv.Quote(d.Snippet))
			if d.Error != "" {
				fmt.Fprintf(&b, ": %s\n", d.Error)
			} else {
				fmt.Fprintf(&b, ", token %d: udgam-ci %s, tokenizer.json %s\n", d.Position, token(d.Got, d.GotPiece), token(d.Want, d.WantPiece))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r Result) referenceName() string {
	if r.Reference == "" {
		return "udgam-ci's Go reading of tokenizer.json (runner/hftok)"
	}
	return r.Reference
}

func token(id int32, piece string) string {
	if id < 0 {
		return "(no more tokens)"
	}
	return fmt.Sprintf("%d %s", id, strconv.Quote(piece))
}

func clip(s string) string {
	const n = 60
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "..."
}
