package evals

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
)

func testHeader(id string) runfile.Header {
	return runfile.Header{
		Schema:    runfile.Schema,
		ID:        id,
		Test:      runfile.TestFresh,
		Model:     runfile.Model{Name: "m", SHA256: "aa"},
		Dataset:   runfile.Dataset{Name: "d", SHA256: "dd", Count: 4},
		Settings:  runfile.Settings{AddBOS: true, BOSID: 1, Window: 8, Stride: 4, Engine: "e"},
		StartedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

func TestOutputResume(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.jsonl")
	o, err := OpenOutput(path, testHeader("first"), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if err := o.Append(id, runfile.Doc{ID: id, Bytes: 3, Tokens: 3, Bits: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Append("a", runfile.Doc{ID: "a"}); err == nil {
		t.Error("second record for a: no error")
	}
	o.Close()
	// A kill in the middle of a write leaves a torn line.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"id":"c","sou`)
	f.Close()

	if _, err := OpenOutput(path, testHeader("again"), false); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("create over an existing run: %v, want a refusal naming --resume", err)
	}
	o, err = OpenOutput(path, testHeader("second"), true)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Resumed || o.Header.ID != "first" || !o.Done("a") || !o.Done("b") || o.Done("c") || o.DoneCount() != 2 || len(o.Prior.Docs) != 2 {
		t.Errorf("resumed output: resumed=%v id=%s done=%d prior=%d", o.Resumed, o.Header.ID, o.DoneCount(), len(o.Prior.Docs))
	}
	if err := o.Append("c", runfile.Doc{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	o.Close()
	run, err := runfile.ReadFile(path)
	if err != nil {
		t.Fatalf("resumed file does not read back: %v", err)
	}
	if len(run.Docs) != 3 || run.Docs[2].ID != "c" {
		t.Errorf("resumed file has %d docs", len(run.Docs))
	}

	// Other settings: refused.
	other := testHeader("third")
	other.Settings.Window = 16
	if _, err := OpenOutput(path, other, true); err == nil || !strings.Contains(err.Error(), "window") {
		t.Errorf("resume with another window: %v, want an error naming window", err)
	}
}

func TestOutputResumeWithoutFileStarts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "new.jsonl")
	o, err := OpenOutput(path, testHeader("fresh"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if o.Resumed || o.Header.ID != "fresh" || o.DoneCount() != 0 {
		t.Errorf("resume of a missing file: resumed=%v id=%s", o.Resumed, o.Header.ID)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("no file made: %v", err)
	}
}
