package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
)

func recs() []runfile.Item {
	return []runfile.Item{
		{ID: "pea-add-1-0", Logprobs: []float64{-3.5, -4.25, -5}, Pred: 0, Tokens: 6},
		{ID: "pea-compare-1-0", Logprobs: []float64{-7, -2}, Pred: 1, Tokens: 4},
	}
}

func vals() []value {
	return []value{
		{id: "pea-add-1-0", pick: 0, tokens: []int{2, 2, 2}, logprobs: []float64{-3.5 + 3e-5, -4.25, -5}},
		{id: "pea-compare-1-0", pick: 1, tokens: []int{3, 1}, logprobs: []float64{-7 - 2.4e-4, -2 - 6e-5}},
	}
}

func TestCompareAgreeingValues(t *testing.T) {
	t.Parallel()
	rep, err := compare(vals(), recs(), 1e-4, false)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if rep.items != 2 || rep.choices != 5 || rep.samePicks != 2 ||
		rep.maxID != "pea-compare-1-0" || !near(rep.maxDiff, 2.4e-4) ||
		rep.maxPerTokenID != "pea-compare-1-0" || !near(rep.maxPerToken, 8e-5) {
		t.Fatalf("report %+v, want 2 items, 5 choices, 2 same picks, max 2.4e-4 and 8e-5 per token at pea-compare-1-0", rep)
	}
}

func TestCompareNamesWhatDisagrees(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(v []value) []value
		want string
	}{
		{"beyond tolerance", func(v []value) []value { v[1].logprobs[1] -= 1e-4; return v }, "item pea-compare-1-0 choice 1"},
		{"other item", func(v []value) []value { v[0].id = "pea-add-1-1"; return v }, "item 1 is pea-add-1-1 for mc and pea-add-1-0"},
		{"other tokens", func(v []value) []value { v[0].tokens[2] = 3; return v }, "7 continuation tokens for mc, 6"},
		{"other choices", func(v []value) []value { v[0].logprobs = v[0].logprobs[:2]; return v }, "2 choices for mc, 3"},
		{"other pick", func(v []value) []value { v[1].pick = 0; return v }, "mc picks 0, udgam-ci 1"},
		{"fewer items", func(v []value) []value { return v[:1] }, "mc scored 1 items, udgam-ci 2"},
		{"not a number", func(v []value) []value { v[0].logprobs[1] = math.NaN(); return v }, "item pea-add-1-0 choice 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compare(tt.edit(vals()), recs(), 1e-4, false)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// -inform reports values and picks without judging them, but still needs
// the same items and tokens.
func TestCompareInform(t *testing.T) {
	t.Parallel()
	v := vals()
	v[0].logprobs[0] -= 0.5
	v[1].pick = 0
	rep, err := compare(v, recs(), 1e-4, true)
	if err != nil {
		t.Fatal(err)
	}
	if rep.samePicks != 1 || rep.maxID != "pea-add-1-0" || math.Abs(rep.maxDiff-(0.5-3e-5)) > 1e-9 {
		t.Fatalf("report %+v, want 1 same pick and 0.49997 at pea-add-1-0", rep)
	}
	v[0].tokens[0] = 1
	if _, err := compare(v, recs(), 1e-4, true); err == nil || !strings.Contains(err.Error(), "continuation tokens") {
		t.Fatalf("err = %v, want the token counts judged", err)
	}
}

func TestReadValues(t *testing.T) {
	t.Parallel()
	v, err := readValues(strings.NewReader("pea-add-1-0\t2\t3,4,2\t-1.5\t-0.25\t-3e-05\n"), "v")
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 1 || v[0].id != "pea-add-1-0" || v[0].pick != 2 || sum(v[0].tokens) != 9 || len(v[0].logprobs) != 3 || v[0].logprobs[2] != -3e-5 {
		t.Fatalf("read %+v", v)
	}
	for _, bad := range []string{"a\t0\t3\n", "a\tx\t3\t-1\n", "a\t0\tx\t-1\n", "a\t0\t0\t-1\n", "a\t0\t3\t-1\tnope\n", "a\t0\t3\t0.5\n", "a\t0\t3,3\t-1\n"} {
		if _, err := readValues(strings.NewReader(bad), "v"); err == nil || !strings.Contains(err.Error(), "v line 1") {
			t.Errorf("%q: err = %v, want one naming v line 1", bad, err)
		}
	}
}

func TestCheckReadsBothFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	values := filepath.Join(dir, "values.tsv")
	if err := os.WriteFile(values, []byte("x\t0\t1\t-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := check(values, filepath.Join(dir, "missing.jsonl"), 1e-4, false); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Fatalf("err = %v, want one naming the missing run file", err)
	}
}
