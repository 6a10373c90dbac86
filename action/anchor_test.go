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
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
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
		if c.Verdict != compare.NoChange || c.Delta < 0.001 || c.Delta > compare.DefaultMinEffect(runfile.TestFresh) {
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
		if drift := map[bool]string{true: "beyond", false: "within"}[beyond]; o.outputs["drift"] != drift || o.outputs["fresh-anchor-delta"] != fmt.Sprintf("%.4f", a.Delta) {
			t.Errorf("merge %d: outputs drift %q, fresh-anchor-delta %q; want %s, %.4f", k, o.outputs["drift"], o.outputs["fresh-anchor-delta"], drift, a.Delta)
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
	// fail-on: never reports the drift as a warning and passes.
	o := w.run("pull_request", prPayload(59), map[string]string{"model": model, "revision": headSHA, "tests": "fresh",
		"baseline": main, "anchor": anchorPath, "fail-on": "never"})
	if o.err != nil || o.res.ExitCode != 0 || len(o.res.Drifts) != 1 || !strings.Contains(o.log, "::warning title=udgam-ci%3A fresh drifted since the anchor::") {
		t.Errorf("fail-on never: %v, exit %d, %d drifts\n%s", o.err, o.res.ExitCode, len(o.res.Drifts), o.log)
	}
	// Without a budget (0) the change since the anchor is shown, never
	// judged.
	o = w.run("pull_request", prPayload(60), map[string]string{"model": model, "revision": headSHA, "tests": "fresh",
		"baseline": main, "anchor": anchorPath, "max-drift-bpb": "0"})
	if o.err != nil || o.res.ExitCode != 0 || len(o.res.Anchors) != 1 || len(o.res.Drifts) != 0 {
		t.Fatalf("no budget: %v, exit %d, %d drifts\n%s", o.err, o.res.ExitCode, len(o.res.Drifts), o.log)
	}
	if body := ourComments(w.gh, 60)[0].Body; !strings.Contains(body, "; no drift budget") || strings.Contains(body, "beyond") {
		t.Errorf("comment without a budget:\n%s", body)
	}
	// Compared with no baseline, the job summary still shows the drift,
	// and the gate still holds it to the budget.
	o = w.run("pull_request", prPayload(61), map[string]string{"model": model, "revision": headSHA, "tests": "fresh",
		"baseline": "none", "anchor": anchorPath})
	if o.err != nil || o.res.ExitCode != 1 || len(o.res.Drifts) != 1 || !strings.Contains(o.summary, "- Fresh Text since the anchor (run `fresh-release-1`): +0.01") {
		t.Errorf("no baseline: %v, exit %d, %d drifts\n%s", o.err, o.res.ExitCode, len(o.res.Drifts), o.summary)
	}
}

// anchor: server takes each test's anchor from the runs pinned on the
// real report server; a head whose settings differ from the anchor's is
// refused loudly and fails the job, since its drift is not the model's.
func TestActionAnchorFromReportServer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	live := servertest.Start(t, server.Config{CompareResamples: 200}, repo)
	w.newServer = func(url, token string) action.Server { return action.NewServer(url, token, nil) }
	push := fmt.Sprintf(`{"ref":"refs/heads/main","after":"%s","repository":{"full_name":%q,"default_branch":"main"}}`, strings.Repeat("8", 40), repo)
	inputs := map[string]string{"model": model, "revision": baseSHA, "server-url": live.URL, "server-token": live.Tokens[0]}
	if o := w.run("push", push, inputs); o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("push: %v\n%s", o.err, o.log)
	}
	c := &client.Client{BaseURL: live.URL, Token: live.Tokens[0]}
	for _, id := range []string{"fresh-22222222", "probes-22222222"} {
		if _, err := c.PinAnchor(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}

	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.94, "probes": 46}
	inputs = map[string]string{"model": model, "revision": headSHA, "baseline": "revision:" + baseSHA, "anchor": "server",
		"server-url": live.URL, "server-token": live.Tokens[0]}
	o := w.run("pull_request", prPayload(31), inputs)
	if o.err != nil || o.res.ExitCode != 0 || len(o.res.Anchors) != 2 {
		t.Fatalf("pr: %v exit %d, %d anchor comparisons\n%s", o.err, o.res.ExitCode, len(o.res.Anchors), o.log)
	}
	for _, a := range o.res.Anchors {
		if a.BaseRun.ID != a.Test+"-22222222" {
			t.Errorf("%s compared with anchor %s", a.Test, a.BaseRun.ID)
		}
	}
	if body := ourComments(w.gh, 31)[0].Body; !strings.Contains(body, "Probe Suite since the anchor (run `probes-22222222`)") {
		t.Errorf("comment:\n%s", body)
	}

	// The same runs named by id on the server.
	ids := map[string]string{}
	for k, v := range inputs {
		ids[k] = v
	}
	ids["anchor"] = "fresh-22222222, probes-22222222"
	if o := w.run("pull_request", prPayload(33), ids); o.err != nil || len(o.res.Anchors) != 2 || o.res.Anchors[1].BaseRun.ID != "probes-22222222" {
		t.Fatalf("anchor by id: %v, %d anchor comparisons\n%s", o.err, len(o.res.Anchors), o.log)
	}
	ids["anchor"] = "fresh-22222222,fresh-22222222"
	if o := w.run("pull_request", prPayload(33), ids); o.err == nil || !strings.Contains(o.err.Error(), "anchor: fresh-22222222 and run fresh-22222222 are both fresh runs") {
		t.Errorf("two fresh anchors: %v", o.err)
	}

	// Another engine build scored the head: not compared with the anchor.
	w.scorer.engine = "llama.cpp 0000000 (other build)"
	o = w.run("pull_request", prPayload(32), inputs)
	if o.err != nil || o.res.ExitCode != 1 || len(o.res.AnchorErrors) != 2 {
		t.Fatalf("mismatch: %v exit %d, anchor errors %q\n%s", o.err, o.res.ExitCode, o.res.AnchorErrors, o.log)
	}
	if !strings.Contains(o.log, "::error title=udgam-ci%3A no anchor comparison::the drift budget could not be checked: fresh: against anchor run fresh-22222222: runs fresh-22222222 and fresh-11111111 differ in settings that change results (engine:") {
		t.Errorf("log:\n%s", o.log)
	}
}
