package fresh

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A document that starts with the BOS literal is refused by id before
// anything is scored or written, when BOS is put first.
func TestSecondBOSRefused(t *testing.T) {
	t.Parallel()
	m := newByteModel(3)
	bos := m.Info().BOSText
	if bos == "" {
		t.Fatal("the test model's BOS has no text")
	}
	data := genData(6)
	bad := &data.Docs[4]
	bad.Text = bos + bad.Text
	out := filepath.Join(t.TempDir(), "run.jsonl")
	_, err := Run(context.Background(), m, runOptions(data, out))
	if err == nil || !strings.Contains(err.Error(), "document "+bad.ID+":") || !strings.Contains(err.Error(), bos) {
		t.Fatalf("a document starting with %q: err %v, want one naming document %s", bos, err, bad.ID)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the run file was written before the refusal: %v", err)
	}
	if m.calls != 0 {
		t.Errorf("%d Score calls before the refusal", m.calls)
	}
}
