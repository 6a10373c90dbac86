package probes

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/udgamlabs/udgam-ci/evals"
)

func writeText(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeParquet(t *testing.T, items []Item) string {
	t.Helper()
	rows := make([]parquetItem, len(items))
	for i, it := range items {
		rows[i] = parquetItem{ID: it.ID, Type: it.Type, Level: int64(it.Level), Prompt: it.Prompt, Answer: it.Answer, Choices: it.Choices}
	}
	p := filepath.Join(t.TempDir(), "items.parquet")
	if err := parquet.WriteFile(p, rows); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadRoundTrip(t *testing.T) {
	t.Parallel()
	items := generate(t, Options{Types: TypesAll, Per: 3, Seed: 1})
	jsonl := filepath.Join(t.TempDir(), "items.jsonl")
	if err := WriteFile(jsonl, items); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{jsonl, writeParquet(t, items)} {
		set, err := LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(set.Items, items) {
			t.Errorf("%s: items differ after the round trip", path)
		}
		if set.Name != path || len(set.SHA256) != 64 {
			t.Errorf("%s: set %q sha %q", path, set.Name, set.SHA256)
		}
	}
}

func TestLoadNumericAnswer(t *testing.T) {
	t.Parallel()
	p := writeText(t, "n.jsonl", `{"id":"a","type":"add","level":1,"prompt":"Question: What is 1 + 1?\nAnswer:","answer":2,"choices":["2","3"]}`+"\n")
	set, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if set.Items[0].Answer != "2" {
		t.Errorf("answer %q, want \"2\"", set.Items[0].Answer)
	}
}

const good = `{"id":"a","type":"add","level":1,"prompt":"Question: x\nAnswer:","answer":"1","choices":["1","2"]}`

func TestLoadJSONLErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, want string
	}{
		{"answer not a choice", good + "\n" + `{"id":"b","prompt":"Q","answer":"3","choices":["1","2"]}`, "line 2: item b: answer \"3\" is not among the choices"},
		{"one choice", `{"id":"b","prompt":"Q","answer":"1","choices":["1"]}`, "line 1: item b: 1 choices, want at least 2"},
		{"duplicate choices", `{"id":"b","prompt":"Q","answer":"1","choices":["1","2","1"]}`, "line 1: item b: duplicate choices"},
		{"duplicate id", good + "\n\n" + good, `line 3: duplicate id "a" (first on line 1)`},
		{"empty prompt", `{"id":"b","prompt":"  ","answer":"1","choices":["1","2"]}`, "line 1: item b: empty prompt"},
		{"no id", `{"prompt":"Q","answer":"1","choices":["1","2"]}`, "line 1: item has no id"},
		{"no answer", `{"id":"b","prompt":"Q","choices":["1","2"]}`, "line 1: item \"b\" has no answer"},
		{"bad json", good + "\n{", "line 2: invalid JSON"},
		{"two on a line", good + good, "line 1: invalid JSON: trailing data"},
		{"empty file", "\n", "no items"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeText(t, "items.jsonl", tc.text)
			_, err := LoadFile(p)
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q naming %s", err, tc.want, p)
			}
		})
	}
}

func TestLoadParquetErrors(t *testing.T) {
	t.Parallel()
	ok := Item{ID: "a", Type: "add", Level: 1, Prompt: "Q", Answer: "1", Choices: []string{"1", "2"}}
	tests := []struct {
		name  string
		items []Item
		want  string
	}{
		{"answer not a choice", []Item{ok, {ID: "b", Prompt: "Q", Answer: "3", Choices: []string{"1", "2"}}}, `row 2 (id "b"): item b: answer "3" is not among the choices`},
		{"duplicate id", []Item{ok, ok}, `row 2: duplicate id "a"`},
		{"empty prompt", []Item{{ID: "c", Answer: "1", Choices: []string{"1", "2"}}}, `(id "c"): item c: empty prompt`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeParquet(t, tc.items)
			_, err := LoadFile(p)
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q naming %s", err, tc.want, p)
			}
		})
	}
	bad := writeText(t, "x.parquet", "not parquet")
	if _, err := LoadFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("not parquet: %v", err)
	}
}

func TestLoadRefs(t *testing.T) {
	t.Parallel()
	local := writeText(t, "test.jsonl", good+"\n")
	var asked []string
	fetch := func(ref string) (evals.Fetched, error) {
		asked = append(asked, ref)
		return evals.Fetched{Path: local, Name: "hf://udgamlabs/udgam-probes/data/test.jsonl", Revision: strings.Repeat("a", 40)}, nil
	}
	set, err := Load("hf://udgamlabs/udgam-probes@main", fetch)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []string{"hf://udgamlabs/udgam-probes@main"}) || set.Name != "hf://udgamlabs/udgam-probes/data/test.jsonl" || set.Revision != strings.Repeat("a", 40) || len(set.Items) != 1 {
		t.Errorf("asked %q, set %+v", asked, set)
	}
	failing := func(string) (evals.Fetched, error) { return evals.Fetched{}, errors.New("offline") }
	if _, err := Load("hf://a/b@c", failing); err == nil || !strings.Contains(err.Error(), "hf://a/b@c: offline") {
		t.Errorf("fetch failure: %v", err)
	}
	if _, err := Load("hf://udgamlabs/udgam-probes@main", nil); err == nil || !strings.Contains(err.Error(), "cannot fetch") {
		t.Errorf("a hub reference without a fetcher: %v", err)
	}
	if _, err := LoadFile("hf://udgamlabs/udgam-probes@main"); err == nil {
		t.Error("LoadFile took a hub reference")
	}
	set, err = Load(local, nil)
	if err != nil || set.Name != local {
		t.Errorf("local file through Load: %v", err)
	}
	core, err := Load("", nil)
	if err != nil || core.Name != CoreName {
		t.Errorf(`Load(""): %v, want the core set`, err)
	}
}
