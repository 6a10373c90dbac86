package runfile

import (
	"strings"
	"testing"
)

// Unchanged takes a baseline's records only when the model's fingerprint
// and everything that changes scores are the same, and names what
// differs otherwise; a baseline from before fingerprints never qualifies.
func TestUnchanged(t *testing.T) {
	t.Parallel()
	base := header(TestFresh)
	base.ID, base.Model.Fingerprint = "base-1", "fp"
	same := base
	same.ID, same.Model.Name, same.Model.SHA256 = "head-1", "renamed", "other file"
	same.Runtime = Runtime{Threads: 7, BatchSize: 64} // not judged: changes nothing
	same.Git = Git{Ref: "feature"}
	if err := Unchanged(&same, &base); err != nil {
		t.Fatalf("a renamed copy: %v", err)
	}
	for _, tc := range []struct {
		name, want string
		edit       func(h, b *Header)
	}{
		{"old baseline", "no model fingerprint", func(h, b *Header) { b.Model.Fingerprint = "" }},
		{"tensors", "fingerprint differs", func(h, b *Header) { h.Model.Fingerprint = "fp2" }},
		{"window", "window: 2048 -> 1024", func(h, b *Header) { h.Settings.Window = 1024 }},
		{"stride", "stride", func(h, b *Header) { h.Settings.Stride = 512 }},
		{"bos", "add_bos", func(h, b *Header) { h.Settings.AddBOS = false }},
		{"bos mode", "bos_mode", func(h, b *Header) { h.Settings.BOSMode = "yes" }},
		{"dtype", "dtype", func(h, b *Header) { h.Settings.Dtype = "F16" }},
		{"engine", "engine", func(h, b *Header) { h.Settings.Engine = "e2" }},
		{"text prep", "text_prep", func(h, b *Header) { h.Settings.TextPrep = &TextPrep{By: PrepLlama} }},
		{"data", "data differs", func(h, b *Header) { h.Dataset.SHA256 = "ds2" }},
		{"data revision", "data differs", func(h, b *Header) { h.Dataset.Revision = "r2" }},
		{"test", "test", func(h, b *Header) { h.Test = TestProbes }},
		{"sequential baseline", "sequentially", func(h, b *Header) { b.Sequential = &Sequential{Total: 3} }},
	} {
		h, b := same, base
		tc.edit(&h, &b)
		err := Unchanged(&h, &b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// A run's cost counts its records' whole text against the set's bytes the
// header recorded; runs from before text_bytes count the bytes scored, and
// a header without the set's bytes gives no share.
func TestCostOf(t *testing.T) {
	t.Parallel()
	docs := []Doc{{ID: "a", Bytes: 99, TextBytes: 100}, {ID: "b", Bytes: 300}}
	c := CostOf(&Sequential{Total: 10, Bytes: 1600}, docs, nil)
	if c != (Cost{Records: 2, TotalRecords: 10, Bytes: 400, TotalBytes: 1600}) || c.Phrase() != "25.0% of the set's bytes" {
		t.Errorf("cost %+v, %q", c, c.Phrase())
	}
	old := CostOf(&Sequential{Total: 10}, docs, nil)
	if _, ok := old.ByteShare(); ok || old.Phrase() != "" {
		t.Errorf("a header without the set's bytes: %+v", old)
	}
	if p := CostOf(&Sequential{Total: 4}, nil, make([]Item, 3)); p.Records != 3 || p.Phrase() != "" {
		t.Errorf("probes: %+v", p)
	}
	// Tokens, where the whole set's are known (compare, from a baseline
	// with the same tokenizer).
	c.Tokens, c.TotalTokens = 30, 400
	if got := c.Phrase(); got != "25.0% of the set's bytes, 7.5% of its tokens" {
		t.Errorf("with tokens: %q", got)
	}
	p := Cost{Records: 3, TotalRecords: 4, Tokens: 30, TotalTokens: 40}
	if got := p.Phrase(); got != "75.0% of the set's tokens" {
		t.Errorf("probes with tokens: %q", got)
	}
}
