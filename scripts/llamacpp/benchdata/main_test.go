package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/fresh"
)

// Both programs must see the same text: the JSONL passes score fresh's
// validation, and the joined text is exactly those documents.
func TestWriteDocsGivesBothProgramsTheSameText(t *testing.T) {
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
