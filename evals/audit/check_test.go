package audit_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/audit"
)

// A report as `audit artifact --json` writes it decodes back to itself;
// one that was edited, cut or padded is refused with the problem named.
func TestDecodeChecksTheReport(t *testing.T) {
	t.Parallel()
	rep := judge(t, 300, 7, 0.7, 0.5, audit.DefaultLimits)
	if rep.Verdict != audit.Fail {
		t.Fatalf("a 20-point loss: verdict %s", rep.Verdict)
	}
	good, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	back, err := audit.Decode(bytes.NewReader(good), "good.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Section(), rep.Section()) {
		t.Error("the decoded report renders other cells than the original")
	}
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name, body, want string
	}{
		{"verdict flipped", edit(func(m map[string]any) { m["verdict"] = "pass"; delete(m, "reasons") }), "verdict"},
		{"limits raised", edit(func(m map[string]any) { m["limits"] = map[string]any{"bpb": 1, "accuracy": 50} }), "verdict"},
		{"a type dropped", edit(func(m map[string]any) { m["types"] = m["types"].([]any)[1:] }), "types"},
		{"no probes", edit(func(m map[string]any) { delete(m, "probes") }), "probes"},
		{"tests swapped", edit(func(m map[string]any) { m["fresh"], m["probes"] = m["probes"], m["fresh"] }), "fresh"},
		{"kl share over 1", edit(func(m map[string]any) { m["kl"].(map[string]any)["same_top"] = 1.5 }), "kl"},
		{"no reference", edit(func(m map[string]any) { m["reference"].(map[string]any)["name"] = "" }), "reference.name"},
		{"unknown field", edit(func(m map[string]any) { m["extra"] = 1 }), `unknown field "extra"`},
		{"two reports", string(good) + "\n" + string(good), "more after"},
		{"cut short", string(good[:len(good)/2]), "unexpected EOF"},
		{"not JSON", "<html>", "invalid character"},
	} {
		_, err := audit.Decode(strings.NewReader(tc.body), "r.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "r.json") {
			t.Errorf("%s: %v, want an error naming r.json and %q", tc.name, err, tc.want)
		}
	}
}

// The terminal table and the Markdown section show the cells of one
// Section, so every number is the same in both.
func TestTextAndMarkdownShowTheSection(t *testing.T) {
	t.Parallel()
	rep := judge(t, 300, 3, 0.7, 0.55, audit.DefaultLimits)
	var text, md strings.Builder
	if err := audit.RenderText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if err := audit.RenderMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	s := rep.Section()
	rows := append([][]string{}, s.Summary[1:]...)
	for _, typ := range s.Types {
		rows = append(rows, typ.Cells)
		rows = append(rows, typ.Levels...)
	}
	for _, row := range rows {
		for _, cell := range row {
			if !strings.Contains(text.String(), cell) || !strings.Contains(md.String(), cell) {
				t.Errorf("cell %q is missing from the text or the Markdown", cell)
			}
		}
	}
	for _, line := range []string{s.KL, s.Verdict} {
		if !strings.Contains(text.String(), line) || !strings.Contains(md.String(), line) {
			t.Errorf("line %q is missing from the text or the Markdown", line)
		}
	}
}

// Decode never panics, whatever it is given, and what it accepts renders.
func FuzzDecode(f *testing.F) {
	good, err := json.Marshal(judge(f, 100, 1, 0.6, 0.5, audit.DefaultLimits))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{good, good[:len(good)/3], []byte(`{}`), []byte(`{"fresh":{},"probes":{}}`), []byte("null")} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := audit.Decode(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		var text, md strings.Builder
		if err := audit.RenderText(&text, rep); err != nil {
			t.Fatal(err)
		}
		if err := audit.RenderMarkdown(&md, rep); err != nil {
			t.Fatal(err)
		}
	})
}
