package contamination

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/udgamlabs/udgam-ci/internal/numfmt"
)

// Line is the one-sentence result the PR comment and the score summary
// show, such as "0 of 2,000 probe items, 3 of 1,670 Fresh Text documents
// share a 13-gram with the training data".
func (r *Report) Line() string {
	var parts []string
	for _, test := range []string{"probes", "fresh"} {
		s, ok := r.Summary[test]
		if !ok {
			continue
		}
		noun := map[string]string{"probes": "probe items", "fresh": "Fresh Text documents"}[test]
		parts = append(parts, fmt.Sprintf("%s of %s %s", numfmt.Count(s.Contaminated), numfmt.Count(s.Items), noun))
	}
	return fmt.Sprintf("%s share a %d-gram with the training data", strings.Join(parts, ", "), r.N)
}

// WriteText prints the report for people: the summary, per group, then
// each contaminated item with where it was first seen.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "Contamination: %s (%s words, %s bytes of training text in %d files).\n",
		r.Line(), numfmt.Count(int(r.Words)), numfmt.Count(int(r.Bytes)), len(r.Train))
	for _, test := range slices.Sorted(mapKeys(r.Summary)) {
		s := r.Summary[test]
		fmt.Fprintf(w, "\n%-28s %8s %13s %10s\n", test, "items", "contaminated", fmt.Sprintf("> %.2f", r.MinFraction))
		for _, g := range slices.Sorted(mapKeys(s.ByGroup)) {
			gs := s.ByGroup[g]
			fmt.Fprintf(w, "  %-26s %8d %13d %10d\n", nonEmpty(g), gs.Items, gs.Contaminated, gs.Above)
		}
		fmt.Fprintf(w, "  %-26s %8d %13d %10d\n", "all", s.Items, s.Contaminated, s.Above)
	}
	if len(r.Items) > 0 {
		fmt.Fprintln(w, "\nContaminated items (n-grams found / the item's n-grams; first seen at):")
	}
	for _, it := range r.Items {
		at := it.First.File
		if it.First.Row > 0 {
			at += fmt.Sprintf(" row %d", it.First.Row)
		} else {
			at += fmt.Sprintf(" line %d", it.First.Line)
		}
		fmt.Fprintf(w, "  %s %s: %d/%d (%.0f%%) at %s byte %d: %q\n", it.Test, it.ID, it.Matched, it.NGrams, 100*it.Fraction, at, it.First.Offset, it.First.Text)
	}
	if len(r.TooShort) > 0 {
		fmt.Fprintf(w, "\n%d items have fewer than %d words and cannot be checked.\n", len(r.TooShort), r.MinWords)
	}
	return nil
}

func nonEmpty(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// CheckRead says what a scan left unread. Records without text (the field
// absent, or null) are an error unless allowMissing, and a scan that read
// no words at all is one unless allowEmpty: a corpus read under the wrong
// field must not pass for a clean one. What is allowed, and bytes that are
// not UTF-8, come back as warnings.
func (r *Report) CheckRead(allowMissing, allowEmpty bool) (warnings []string, err error) {
	field := cmp.Or(r.TextField, "text")
	var missing, problems []string
	var records int64
	for _, tf := range r.Train {
		records += tf.Records
		unit, at := "records", "line"
		if format, _, _ := classify(tf.Path); format == "parquet" {
			unit, at = "rows", "row"
		}
		if tf.NoText > 0 {
			missing = append(missing, fmt.Sprintf("%s: %s of %s %s have no text in %q, first at %s %d",
				tf.Path, numfmt.Count(int(tf.NoText)), numfmt.Count(int(tf.Records)), unit, field, at, tf.NoTextFirst))
		}
		if tf.InvalidUTF8 > 0 {
			warnings = append(warnings, fmt.Sprintf("%s: %s bytes are not UTF-8, first at %s %d (each read as a separator between words)",
				tf.Path, numfmt.Count(int(tf.InvalidUTF8)), at, tf.InvalidUTF8First))
		}
	}
	if allowMissing {
		warnings = append(missing, warnings...)
	} else if len(missing) > 0 {
		problems = append(problems, "records without text: "+strings.Join(missing, "; "))
	}
	if r.Words == 0 && !allowEmpty {
		files := "files"
		if len(r.Train) == 1 {
			files = "file"
		}
		problems = append(problems, fmt.Sprintf("read no text: %d training %s, %s records, no words", len(r.Train), files, numfmt.Count(int(records))))
	}
	if len(problems) > 0 {
		return warnings, errors.New(strings.Join(problems, "; "))
	}
	return warnings, nil
}
