package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// TestScoredOutsideCIPushes: the README's path to score a model on one's
// own machine, through the command line: `score probes --git-repo` with
// no GitHub variables names no branch, and `push` stores the run on a real
// report server (it was refused: "git.ref: git ref \"\": want 1-255
// characters", issue 32). The run is stored without a branch, so it is
// never any run's baseline, and its page says so.
func TestScoredOutsideCIPushes(t *testing.T) {
	t.Parallel()
	needEngine(t) // it scores
	dir := t.TempDir()
	model := filepath.Join(dir, "bigram.gguf")
	if err := testmodel.WriteBigramGGUF(model, testmodel.RandomBigram(8)); err != nil {
		t.Fatal(err)
	}
	items := generateItems(t, dir, 2)
	out := filepath.Join(dir, "run.jsonl")
	e, _, errb := serverTestEnv(context.Background(), nil)
	if code := run(e, []string{"score", "probes", "--model", model, "--items", items, "--out", out, "--git-repo", "acme/train", "--threads", "1"}); code != 0 {
		t.Fatalf("score probes: exit %d: %s", code, errb)
	}
	r, err := runfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Git.Repo != "acme/train" || r.Header.Git.Ref != "" {
		t.Fatalf("git %+v: want acme/train and no ref (nothing to take one from)", r.Header.Git)
	}
	live := servertest.Start(t, server.Config{CompareResamples: 200}, "acme/train")
	e, stdout, errb := serverTestEnv(context.Background(), nil)
	if code := run(e, []string{"push", out, "--server", live.URL, "--token", live.Tokens[0]}); code != 0 {
		t.Fatalf("push: exit %d: %s%s", code, stdout, errb)
	}
	resp, err := http.Get(live.URL + "/runs/" + r.Header.ID)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "no branch recorded") {
		t.Fatalf("run page: %d, want 200 saying no branch was recorded", resp.StatusCode)
	}
	os.Remove(out)
}
