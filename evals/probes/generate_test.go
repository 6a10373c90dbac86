package probes

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite data/core-2026.jsonl from the generator")

const corePath = "data/core-2026.jsonl"

func generate(t *testing.T, opts Options) []Item {
	t.Helper()
	items, err := Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func encode(t *testing.T, items []Item) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(&buf, items); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The embedded default set must be exactly what the generator makes, so it
// can never drift from the code. go test -run TestCoreFile -update rewrites it.
func TestCoreFile(t *testing.T) {
	t.Parallel()
	items := generate(t, Options{Types: TypesCore, Per: DefaultPer, Seed: DefaultSeed})
	want := encode(t, items)
	if *update {
		if err := WriteFile(corePath, items); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(corePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from Generate(core, 100, 2026) (%d vs %d bytes); rerun with -update if the change is meant", corePath, len(got), len(want))
	}
	if !*update && !bytes.Equal(coreJSONL, want) {
		t.Fatal("the embedded core set differs from the file: rebuild")
	}
	set, err := Core()
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Items) != 2000 {
		t.Fatalf("embedded core set has %d items, want 2000", len(set.Items))
	}
}

func TestCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  Options
		total int
		count map[string]int // type -> items
	}{
		{"core", Options{Types: TypesCore, Per: 100, Seed: 2026}, 2000, map[string]int{
			"add": 300, "mul": 264, "units": 300, "sequence": 236, "word_problem": 300, "compare": 300, "syllogism": 300,
		}},
		{"core other seed", Options{Types: TypesCore, Per: 100, Seed: 7}, 2000, map[string]int{
			"add": 300, "mul": 264, "units": 300, "sequence": 236, "word_problem": 300, "compare": 300, "syllogism": 300,
		}},
		{"frontier", Options{Types: TypesFrontier, Per: 100, Seed: 2026}, 600, map[string]int{"weekday": 300, "ordering": 300}},
		{"all per 10", Options{Types: TypesAll, Per: 10, Seed: 2026}, 270, nil},
		{"per 50 caps the small levels too", Options{Types: TypesCore, Per: 50, Seed: 1}, 1036, map[string]int{"mul": 150, "sequence": 136}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			items := generate(t, tc.opts)
			if len(items) != tc.total {
				t.Errorf("%d items, want %d", len(items), tc.total)
			}
			got := map[string]int{}
			levels := map[string]int{}
			for _, it := range items {
				got[it.Type]++
				levels[fmt.Sprintf("%s/%d", it.Type, it.Level)]++
			}
			for typ, n := range tc.count {
				if got[typ] != n {
					t.Errorf("%s: %d items, want %d", typ, got[typ], n)
				}
			}
			if tc.opts.Per == 100 && tc.opts.Types == TypesCore {
				if levels["mul/1"] != 64 || levels["sequence/2"] != 36 {
					t.Errorf("mul/1 %d (want 64), sequence/2 %d (want 36)", levels["mul/1"], levels["sequence/2"])
				}
			}
		})
	}
}

func TestCoreExcludesFrontier(t *testing.T) {
	t.Parallel()
	core := generate(t, Options{Types: TypesCore, Per: 20, Seed: 3})
	all := generate(t, Options{Types: TypesAll, Per: 20, Seed: 3})
	// Each type and level has its own stream, so adding frontier types
	// leaves the core items as they were.
	if !bytes.Equal(encode(t, core), encode(t, all[:len(core)])) {
		t.Error("core items change when frontier types are generated too")
	}
	for _, it := range core {
		if it.Type == "weekday" || it.Type == "ordering" {
			t.Fatalf("core set holds frontier item %s", it.ID)
		}
	}
}

func TestDeterminism(t *testing.T) {
	t.Parallel()
	a := encode(t, generate(t, Options{Types: TypesAll, Per: 100, Seed: 2026}))
	b := encode(t, generate(t, Options{Types: TypesAll, Per: 100, Seed: 2026}))
	if !bytes.Equal(a, b) {
		t.Fatal("the same seed gave different bytes")
	}
	c := encode(t, generate(t, Options{Types: TypesAll, Per: 100, Seed: 2027}))
	if bytes.Equal(a, c) {
		t.Fatal("seeds 2026 and 2027 gave the same items")
	}
}

func TestGenerateRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, opts := range []Options{{Types: "some", Per: 10}, {Types: TypesCore, Per: 0}} {
		if _, err := Generate(opts); err == nil {
			t.Errorf("Generate(%+v) succeeded", opts)
		}
	}
}

func TestItemShape(t *testing.T) {
	t.Parallel()
	items := generate(t, Options{Types: TypesAll, Per: 100, Seed: 2026})
	prompts := map[string]string{}
	ids := map[string]bool{}
	next := map[string]int{}
	for _, it := range items {
		key := fmt.Sprintf("%s-%d", it.Type, it.Level)
		if want := fmt.Sprintf("pea-%s-%d", key, next[key]); it.ID != want {
			t.Errorf("id %s, want %s", it.ID, want)
		}
		next[key]++
		if ids[it.ID] {
			t.Errorf("duplicate id %s", it.ID)
		}
		ids[it.ID] = true
		if !strings.HasPrefix(it.Prompt, "Question: ") || !strings.HasSuffix(it.Prompt, "\nAnswer:") || strings.Count(it.Prompt, "\n") != 1 {
			t.Errorf("%s: prompt %q is not of the form Question: ...\\nAnswer:", it.ID, it.Prompt)
		}
		if prev, ok := prompts[it.Prompt]; ok {
			t.Errorf("%s repeats the prompt of %s", it.ID, prev)
		}
		prompts[it.Prompt] = it.ID
		if err := it.Validate(); err != nil {
			t.Error(err)
		}
		want := 4
		switch it.Type {
		case "compare", "syllogism":
			want = 2
		case "ordering":
			want = min(4, it.Level+2)
		}
		if len(it.Choices) != want {
			t.Errorf("%s: %d choices, want %d", it.ID, len(it.Choices), want)
		}
	}
}

// The answer's position among the choices is spread out, not always first.
func TestChoiceOrderShuffled(t *testing.T) {
	t.Parallel()
	pos := map[int]int{}
	for _, it := range generate(t, Options{Types: TypesCore, Per: 100, Seed: 2026}) {
		if len(it.Choices) == 4 {
			pos[it.AnswerIndex()]++
		}
	}
	for i := 0; i < 4; i++ {
		if pos[i] < 250 { // 1,400 four-choice items: about 350 each
			t.Errorf("answer at position %d in %d items: %v", i, pos[i], pos)
		}
	}
}

func TestFormatInt(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0", 9999: "9999", 10000: "10,000", 110730: "110,730", 1713248: "1,713,248", -12345: "-12,345"} {
		if got := formatInt(n); got != want {
			t.Errorf("formatInt(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWriteFileAtomic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "items.jsonl")
	items := generate(t, Options{Types: TypesCore, Per: 2, Seed: 1})
	if err := WriteFile(path, items); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, encode(t, items)) {
		t.Error("file differs from Encode")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "x.jsonl"), items); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}
