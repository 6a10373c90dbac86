package probes

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
)

// A prompt that starts with the BOS literal is refused by id before
// anything is scored or written, when BOS is put first; scored without
// BOS it is the prompt's only BOS and is accepted.
func TestSecondBOSRefused(t *testing.T) {
	t.Parallel()
	m := testmodel.RandomBigram(3)
	bos := m.Info().BOSText
	if bos == "" {
		t.Fatal("the test model's BOS has no text")
	}
	set := testSet(t, 2)
	bad := &set.Items[5]
	bad.Prompt = bos + bad.Prompt
	out := filepath.Join(t.TempDir(), "run.jsonl")
	_, err := Run(context.Background(), m, runOpts(out, set))
	if err == nil || !strings.Contains(err.Error(), "item "+bad.ID+":") || !strings.Contains(err.Error(), bos) {
		t.Fatalf("a prompt starting with %q: err %v, want one naming item %s", bos, err, bad.ID)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the run file was written before the refusal: %v", err)
	}
	opt := runOpts(out, set)
	opt.BOSMode = evals.BOSNo
	if _, err := Run(context.Background(), m, opt); err != nil {
		t.Errorf("without BOS first the prompt's own BOS is the only one: %v", err)
	}
}
