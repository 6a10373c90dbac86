package action_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/action"
	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/ggufspec"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// driftScorer scores merge number step of a model that loses perBPB bits
// per byte with every merge, each run with its own small noise, as
// retrained checkpoints have.
type driftScorer struct {
	step   int
	perBPB float64
}

func (s *driftScorer) run(id string, git runfile.Git, window int) *runfile.Run {
	pr := 0
	if git.PR != nil {
		pr = *git.PR
	}
	run := servertest.Spec{ID: id, Test: runfile.TestFresh, Model: model, Revision: headSHA, Repo: repo, Ref: git.Ref, PR: pr,
		Records: 140, Score: 0.95 + float64(s.step)*s.perBPB, Seed: 7, Engine: ggufspec.EngineVersion(), Window: window}.Run()
	run.Docs = comparetest.Jittered(run.Docs, uint64(s.step), 0.001)
	return run
}

func (s *driftScorer) Score(ctx context.Context, req action.ScoreRequest) (*runfile.Run, error) {
	run := s.run(fmt.Sprintf("fresh-merge-%02d", s.step), req.Git, req.Window)
	return run, runfile.WriteFile(req.Out, run)
}

// Ten pull requests, each 0.0015 bits per byte worse than main, inside
// the 0.002 minimum effect: every comparison with main passes, and the
// first pull request whose change since the anchor is beyond the 0.01
// drift budget (the seventh, 0.0105) fails, its comment giving the change
// since the anchor with its interval.
func TestActionDriftFailsAtTheFirstPullRequestBeyondTheBudget(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ds := &driftScorer{perBPB: 0.0015}
	w.score = ds
	anchorPath := filepath.Join(t.TempDir(), "anchor.jsonl")
	if err := runfile.WriteFile(anchorPath, ds.run("fresh-release-1", runfile.Git{Repo: repo, Ref: "main"}, 2048)); err != nil {
		t.Fatal(err)
	}
	main := anchorPath // main's checkpoint is the release at first
	for k := 1; k <= 10; k++ {
		ds.step = k
		pr := 40 + k
		o := w.run("pull_request", prPayload(pr), map[string]string{"model": model, "revision": headSHA, "tests": "fresh",
			"baseline": main, "anchor": anchorPath})
		if o.err != nil {
			t.Fatalf("merge %d: %v\n%s", k, o.err, o.log)
		}
		if len(o.res.Comparisons) != 1 || len(o.res.Anchors) != 1 {
			t.Fatalf("merge %d: %d comparisons, %d with the anchor\n%s", k, len(o.res.Comparisons), len(o.res.Anchors), o.log)
		}
		c, a := o.res.Comparisons[0], o.res.Anchors[0]
		if c.Verdict != compare.NoChange || c.Delta < 0.001 || c.Delta > compare.DefaultMinEffectBPB {
			t.Errorf("merge %d against main: %s, delta %.4f; want no change, inside the minimum effect", k, c.Verdict, c.Delta)
		}
		if want := float64(k) * 0.0015; a.BaseRun.ID != "fresh-release-1" || a.Delta < want-0.0005 || a.Delta > want+0.0005 || a.CI[0] >= a.Delta || a.CI[1] <= a.Delta {
			t.Errorf("merge %d since the anchor: %+v, want %.4f with its interval", k, a.Result, want)
		}
		body := ourComments(w.gh, pr)[0].Body
		cell := "| " + report.AnchorCell(a) + " |"
		if !strings.Contains(body, cell) {
			t.Errorf("merge %d: the comment lacks the cell %q since the anchor:\n%s", k, cell, body)
		}
		beyond := k >= 7
		if got := o.res.ExitCode == 1; got != beyond {
			t.Errorf("merge %d (%.4f since the anchor): failed %v, want %v\n%s", k, a.Delta, got, beyond, o.log)
		}
		annot := "::error title=udgam-ci%3A fresh drifted since the anchor::acme/tiny fresh drifted since anchor run fresh-release-1: bpb"
		if strings.Contains(o.log, annot) != beyond || strings.Contains(body, "beyond the 0.0100 bpb drift budget") != beyond {
			t.Errorf("merge %d: the drift annotation or comment do not say beyond = %v:\n%s\n%s", k, beyond, o.log, body)
		}
		if beyond && !strings.Contains(o.summary, "since the anchor") {
			t.Errorf("merge %d: the job summary does not show the change since the anchor:\n%s", k, o.summary)
		}
		if k == 7 {
			goldenComment(t, w.gh, pr, "comment_drift.md")
			chk := w.gh.Checks()
			last := chk[len(chk)-1]
			if last.Conclusion != "failure" || !strings.Contains(last.Output.Title, "fresh drifted since the anchor") || !strings.Contains(last.Output.Summary, "Since the anchor") {
				t.Errorf("check run %+v", last)
			}
		}
		main = o.outputs["fresh-run-file"] // merged: main's checkpoint now
	}
}
