package hfprep

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func show(ss []Segment) string {
	var b strings.Builder
	for _, s := range ss {
		if s.Added {
			fmt.Fprintf(&b, "[%q=%d]", s.Text, s.ID)
		} else {
			fmt.Fprintf(&b, "%q", s.Text)
		}
	}
	return b.String()
}

// TestParse builds the preparation as textprep does, from the record a
// GGUF keeps: "<s>" is matched on raw text, "é" (normalized=true) only
// after NFC has composed it.
func TestParse(t *testing.T) {
	t.Parallel()
	p, err := Parse(json.RawMessage(`{"type":"NFC"}`), json.RawMessage(
		`[{"id":1,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},`+
			`{"id":9,"content":"é","single_word":false,"lstrip":false,"rstrip":false,"normalized":true,"special":false}]`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ text, want, raw string }{
		{"ae\u0301<s>b", `"a"["é"=9]["<s>"=1]"b"`, "\"ae\u0301\"[\"<s>\"=1]\"b\""},
		{"<s>", `["<s>"=1]`, `["<s>"=1]`},
		{"", ``, ``},
	} {
		got, err := p.Segments(tt.text)
		if err != nil || show(got) != tt.want {
			t.Errorf("Segments(%q) = %s, %v; want %s", tt.text, show(got), err, tt.want)
		}
		if g := show(p.SplitAdded(tt.text)); g != tt.raw {
			t.Errorf("SplitAdded(%q) = %s, want %s", tt.text, g, tt.raw)
		}
	}
	if got := p.Split("ab"); len(got) != 1 || !got[0].First {
		t.Errorf("Split(ab) = %+v, want one segment that starts the text", got)
	}
	if _, err := p.Segments("a\xff"); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}
	for _, tt := range []struct{ norm, added, want string }{
		{`{"type":"Precompiled"}`, `null`, `normalizer: type "Precompiled" is not implemented`},
		{`null`, `[{"content":"<s>"}]`, `added_tokens: added token "<s>" has no id`},
		{`null`, `[{"id":1,"content":"<s>"},{"id":2,"content":"<s>"}]`, `"<s>" is listed twice (ids 1 and 2)`},
		{`null`, `[{"id":-1,"content":"<s>"}]`, `added token "<s>" has id -1`},
	} {
		if _, err := Parse(json.RawMessage(tt.norm), json.RawMessage(tt.added)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s: %v, want an error with %q", tt.norm, tt.added, err, tt.want)
		}
	}
}
