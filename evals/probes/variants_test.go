package probes

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Every published item of every generated type (the core set and the
// frontier types) has each variant: the same type, level, answer and
// choices in the same order, a prompt in the variant's frame that differs
// from the published one and from the other variant's, and the id
// "<item id>@<variant>". Made twice, the variants are identical.
func TestVariantsOfTheGeneratedSets(t *testing.T) {
	t.Parallel()
	core, err := Core()
	if err != nil {
		t.Fatal(err)
	}
	frontier, err := Generate(Options{Types: TypesFrontier, Per: 40, Seed: DefaultSeed})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		items []Item
		types []string
	}{
		{"core", core.Items, CoreTypes()},
		{"frontier", frontier, FrontierTypes()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkVariants(t, tc.items, tc.types)
		})
	}
}

func checkVariants(t *testing.T, items []Item, types []string) {
	t.Helper()
	names, err := ParseVariants(VariantsAll)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := VariantItems(items, names)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(names)*len(items) {
		t.Fatalf("%d variant items for %d items and %d variants", len(vs), len(items), len(names))
	}
	again, err := VariantItems(items, names)
	if err != nil || !reflect.DeepEqual(vs, again) {
		t.Fatalf("variants differ between two calls: %v", err)
	}
	frame := map[string][2]string{VariantReworded: {"Question: ", "\nAnswer:"}, VariantTerse: {"Q: ", "\nA:"}}
	prompts := map[string]bool{}
	seenType := map[string]bool{}
	for i, v := range vs {
		it := items[i/len(names)]
		name := names[i%len(names)]
		f := frame[name]
		switch {
		case v.ID != it.ID+"@"+name || v.Variant != name:
			t.Fatalf("variant %d of %s: id %s variant %q", i%len(names), it.ID, v.ID, v.Variant)
		case v.Type != it.Type || v.Level != it.Level || v.Answer != it.Answer || !slices.Equal(v.Choices, it.Choices):
			t.Fatalf("%s: the variant changes the item: %+v vs %+v", v.ID, v, it)
		case v.Prompt == it.Prompt || !strings.HasPrefix(v.Prompt, f[0]) || !strings.HasSuffix(v.Prompt, f[1]):
			t.Fatalf("%s: prompt %q, want a rewording in %q...%q", v.ID, v.Prompt, f[0], f[1])
		case prompts[v.Prompt]:
			t.Fatalf("%s: prompt %q repeats", v.ID, v.Prompt)
		}
		prompts[v.Prompt] = true
		seenType[v.Type] = true
		// The question's numbers, and the choices it names (the two
		// numbers compared, the people ordered), are all in every
		// variant's prompt.
		for _, f := range strings.FieldsFunc(it.Prompt, func(r rune) bool { return !strings.ContainsRune("0123456789.,", r) }) {
			if f = strings.Trim(f, ".,"); f != "" && !strings.Contains(v.Prompt, f) {
				t.Fatalf("%s: %q of %q is missing from %q", v.ID, f, it.Prompt, v.Prompt)
			}
		}
		for _, c := range it.Choices {
			if strings.Contains(it.Prompt, c) && !strings.Contains(v.Prompt, c) {
				t.Fatalf("%s: choice %q of %q is missing from %q", v.ID, c, it.Prompt, v.Prompt)
			}
		}
	}
	for _, typ := range types {
		if !seenType[typ] {
			t.Errorf("no variants of type %s", typ)
		}
	}
}

func TestParseVariants(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"all", []string{VariantReworded, VariantTerse}, ""},
		{"terse", []string{VariantTerse}, ""},
		{"published, terse,terse", []string{VariantTerse}, ""},
		{"fancy", nil, `unknown variant "fancy"`},
	} {
		got, err := ParseVariants(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseVariants(%q) error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseVariants(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// Items of a type without rewordings, or whose prompt is not in the
// published form, are refused by id rather than skipped.
func TestVariantsRefuseByID(t *testing.T) {
	t.Parallel()
	items := []Item{{ID: "own-riddle-1-0", Type: "riddle", Prompt: "Question: x?\nAnswer:"}}
	if _, err := VariantItems(items, []string{VariantTerse}); err == nil || !strings.Contains(err.Error(), "item own-riddle-1-0:") {
		t.Errorf("type without rewordings: %v", err)
	}
	items = []Item{{ID: "pea-weekday-1-0", Type: "weekday", Prompt: "Question: x?\nAnswer:"}}
	if _, err := VariantItems(items, []string{VariantTerse}); err == nil || !strings.Contains(err.Error(), "item pea-weekday-1-0:") {
		t.Errorf("frontier item not in the published form: %v", err)
	}
	items = []Item{{ID: "custom-1", Type: "add", Prompt: "What is 1 + 2?"}}
	if _, err := VariantItems(items, []string{VariantTerse}); err == nil || !strings.Contains(err.Error(), "item custom-1:") {
		t.Errorf("prompt not in the published form: %v", err)
	}
}

// Scoring the variants leaves the published records exactly as a run
// without them: the headline is the published score, bit for bit.
func TestRunWithVariantsKeepsThePublishedScore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set := testSet(t, 3)
	m := testmodel.RandomBigram(5)
	plain := filepath.Join(dir, "plain.jsonl")
	if _, err := Run(context.Background(), m, runOpts(plain, set)); err != nil {
		t.Fatal(err)
	}
	withVariants := filepath.Join(dir, "variants.jsonl")
	opt := runOpts(withVariants, set)
	opt.Variants = []string{VariantReworded, VariantTerse}
	res, err := Run(context.Background(), m, opt)
	if err != nil {
		t.Fatal(err)
	}
	a, err := runfile.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := runfile.ReadFile(withVariants)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Items, b.Items) {
		t.Error("the published records differ when variants are scored too")
	}
	if len(b.Variants) != 2*len(set.Items) || b.Variants[0].ID != set.Items[0].ID+"@"+VariantReworded || b.Variants[0].Variant != VariantReworded {
		t.Fatalf("%d variant records, first %+v", len(b.Variants), b.Variants[0])
	}
	// `score probes` adds the spread after scoring, as here.
	if res.Summary.Variants, err = compare.RunSpread(res.Tally.Run, compare.Options{}); err != nil {
		t.Fatal(err)
	}
	if v := res.Summary.Variants; v == nil || len(v.Variants) != 3 || v.Items != len(set.Items) || v.Variants[0].Accuracy != res.Summary.Accuracy {
		t.Errorf("summary variants %+v, want the published and two variants over %d items", v, len(set.Items))
	}
	var text strings.Builder
	if err := res.Summary.WriteText(&text); err != nil || !strings.Contains(text.String(), "prompt variants") || !strings.Contains(text.String(), "range (max - min)") {
		t.Errorf("summary text lacks the variants (%v):\n%s", err, text.String())
	}
	if res.Summary.Accuracy != runfile.SummarizeProbes(a.Items).Accuracy || res.Summary.Items != len(set.Items) {
		t.Errorf("headline %v over %d items, want the published %v over %d", res.Summary.Accuracy, res.Summary.Items, runfile.SummarizeProbes(a.Items).Accuracy, len(set.Items))
	}
}
