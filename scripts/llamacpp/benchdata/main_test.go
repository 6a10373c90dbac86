//go:build cgo

package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
)

// Both programs must see the same text: the JSONL passes score fresh's
// validation, and the joined text is exactly those documents.
func TestWriteDocsGivesBothProgramsTheSameText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := writeDocs(dir, 30); err != nil {
		t.Fatal(err)
	}
	data, err := fresh.LoadFile(filepath.Join(dir, "docs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(data.Docs) != 10 {
		t.Fatalf("%d documents, want every 30th of 300 = 10", len(data.Docs))
	}
	all := fresh.MixedBenchDocs(300)
	texts := make([]string, len(data.Docs))
	for i, d := range data.Docs {
		if want := all[30*i]; d.ID != want.ID || d.Text != want.Text {
			t.Fatalf("document %d is %s, want %s of the benchmark's mixed set", i, d.ID, want.ID)
		}
		texts[i] = d.Text
	}
	txt, err := os.ReadFile(filepath.Join(dir, "docs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(txt) != strings.Join(texts, "\n\n") {
		t.Fatal("docs.txt is not the JSONL's documents joined by blank lines")
	}
}

// The tokens file holds, for each item, the ids udgam-ci scores: BOS and
// the prompt's bytes, then " "+choice's bytes, tokenized apart.
func TestWriteTokensGivesBothProgramsTheSameTokens(t *testing.T) {
	t.Parallel()
	set, err := probes.Core()
	if err != nil {
		t.Fatal(err)
	}
	items := []probes.Item{set.Items[0], set.Items[len(set.Items)-1]}
	path := filepath.Join(t.TempDir(), "probes.tok")
	if err := writeTokens(path, items, testmodel.RandomBigram(1), true, testmodel.BOS); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != len(items) {
		t.Fatalf("%d lines, want %d", len(lines), len(items))
	}
	bytesOf := func(s string) string {
		f := make([]string, len(s))
		for i := range len(s) {
			f[i] = strconv.Itoa(int(s[i]))
		}
		return strings.Join(f, " ")
	}
	for i, it := range items {
		want := []string{it.ID, strconv.Itoa(it.AnswerIndex()), strconv.Itoa(int(testmodel.BOS)) + " " + bytesOf(it.Prompt)}
		for _, c := range it.Choices {
			want = append(want, bytesOf(" "+c))
		}
		if got := strings.Split(lines[i], "\t"); !reflect.DeepEqual(got, want) {
			t.Errorf("line %d:\n got %q\nwant %q", i+1, got, want)
		}
	}
}

func TestWriteTokensRefusesIDsThatBreakLines(t *testing.T) {
	t.Parallel()
	it := probes.Item{ID: "a\tb", Type: "add", Level: 1, Prompt: "Question: 1+1?\nAnswer:", Answer: "2", Choices: []string{"2", "3"}}
	path := filepath.Join(t.TempDir(), "probes.tok")
	err := writeTokens(path, []probes.Item{it}, testmodel.RandomBigram(1), true, testmodel.BOS)
	if err == nil || !strings.Contains(err.Error(), "tab or newline") {
		t.Fatalf("err = %v, want a refusal naming the tab", err)
	}
	if _, statErr := os.Stat(path); !os.IsNotExist(statErr) {
		t.Fatalf("a refused file was written: %v", statErr)
	}
}
