package runfile

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Reused records that a run scored nothing because its model is unchanged
// from a baseline's: the same GGUF fingerprint and every setting that
// changes scores (Unchanged), so the baseline run's records are its own,
// exactly.
type Reused struct {
	From        string `json:"from"`        // the baseline run's id
	Fingerprint string `json:"fingerprint"` // the model's, which the baseline's equals
}

// Unchanged says why base's records cannot stand for a run with header
// head, or nil when they can: both models have one fingerprint, and the
// test, the data, and every setting (BOS, window, stride, dtype,
// tokenizer, text preparation, engine, formulation, template) are equal,
// and base scored its records whole, not sequentially. Which of them the
// head takes is the caller's to check. When in doubt it is a change: a
// baseline without a fingerprint is never unchanged.
func Unchanged(head, base *Header) error {
	switch {
	case base.Model.Fingerprint == "":
		return fmt.Errorf("baseline run %s records no model fingerprint (made before udgam-ci recorded one)", base.ID)
	case head.Model.Fingerprint != base.Model.Fingerprint:
		return errors.New("the model's fingerprint differs from the baseline's")
	case head.Test != base.Test:
		return fmt.Errorf("the baseline run %s is of test %s, not %s", base.ID, base.Test, head.Test)
	case !reflect.DeepEqual(head.Dataset, base.Dataset):
		return fmt.Errorf("the data differs from baseline run %s's (%s@%s, %s)", base.ID, base.Dataset.Name, OrNone(base.Dataset.Revision), base.Dataset.SHA256)
	case !reflect.DeepEqual(head.Settings, base.Settings):
		if ds := settingsDiffs(head, base); len(ds) > 0 {
			return fmt.Errorf("settings differ from baseline run %s's: %s", base.ID, FormatDiffs(ds))
		}
		return fmt.Errorf("settings differ from baseline run %s's", base.ID)
	case base.Sequential != nil:
		return fmt.Errorf("baseline run %s was scored sequentially (--until decided), not whole", base.ID)
	}
	return nil
}

// settingsDiffs are the differing settings between two headers, runtime
// ones left out.
func settingsDiffs(head, base *Header) []Diff {
	var out []Diff
	for _, f := range fields {
		if b, h := f.get(base), f.get(head); b != h && (f.judged || f.key == "bos_mode" || f.key == "template" || f.key == "chat_template_sha256") {
			out = append(out, Diff{Key: f.key, Base: b, Head: h, Judged: f.judged})
		}
	}
	return out
}

// Cost is how much of its set a run scored: records, for Fresh Text the
// bytes of their text, and the tokens scored, against the whole set's
// where known (a sequential run's header knows the set's bytes; only the
// baseline, scored with the same tokenizer, knows its tokens). The one
// count of cost for every surface, whatever a record is.
type Cost struct {
	Records      int   `json:"records"`
	TotalRecords int   `json:"total_records"`
	Bytes        int64 `json:"bytes,omitempty"`
	TotalBytes   int64 `json:"total_bytes,omitempty"` // 0: not known
	Tokens       int64 `json:"tokens,omitempty"`
	TotalTokens  int64 `json:"total_tokens,omitempty"` // 0: not known
}

// CostOf is what the records of docs and items cost out of the set h
// describes (nil: the records are the set).
func CostOf(h *Sequential, docs []Doc, items []Item) Cost {
	c := Cost{Records: len(docs) + len(items)}
	for i := range docs {
		c.Bytes += int64(TextBytesOf(&docs[i]))
		c.Tokens += int64(docs[i].Tokens)
	}
	for i := range items {
		c.Tokens += int64(items[i].Tokens)
	}
	c.TotalRecords, c.TotalBytes, c.TotalTokens = c.Records, c.Bytes, c.Tokens
	if h != nil {
		c.TotalRecords, c.TotalBytes, c.TotalTokens = h.Total, h.Bytes, 0
	}
	return c
}

// TextBytesOf is a document's text in bytes: all of it, where the run
// recorded that, else the bytes scored (runs before text_bytes); a span
// record's share of its document's.
func TextBytesOf(d *Doc) int {
	if d.Of != "" {
		return d.Bytes // a span: its share of the document's bytes
	}
	if d.TextBytes > 0 {
		return d.TextBytes
	}
	return d.Bytes
}

// ByteShare is the share of the set's bytes scored, and whether it is
// known.
func (c Cost) ByteShare() (float64, bool) {
	if c.TotalBytes <= 0 {
		return 0, false
	}
	return float64(c.Bytes) / float64(c.TotalBytes), true
}

// Phrase is the shares as every surface says them beside the records,
// "38.2% of the set's bytes, 36.9% of its tokens"; "" when neither is
// known.
func (c Cost) Phrase() string {
	var parts []string
	if s, ok := c.ByteShare(); ok {
		parts = append(parts, fmt.Sprintf("%.1f%% of the set's bytes", 100*s))
	}
	if c.TotalTokens > 0 {
		of := "the set's"
		if len(parts) > 0 {
			of = "its"
		}
		parts = append(parts, fmt.Sprintf("%.1f%% of %s tokens", 100*float64(c.Tokens)/float64(c.TotalTokens), of))
	}
	return strings.Join(parts, ", ")
}

// Line is what every surface says of a reused run: "unchanged model:
// records reused from run X, no scoring".
func (r *Reused) Line() string {
	return "unchanged model: records reused from run " + r.From + ", no scoring"
}
