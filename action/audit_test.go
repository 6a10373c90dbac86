package action_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/action"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/audit/audittest"
)

// failedAudit is an audit whose artifact lost twelve points of accuracy.
func failedAudit(t *testing.T) *audit.Report {
	t.Helper()
	rep := audittest.Report(t, audittest.Spec{Items: 700, Seed: 3, PRef: 0.6, PArt: 0.48, Quantized: "q4_0",
		KL: audit.KL{Tokens: 1000, Mean: 0.02, P99: 0.3, Max: 1, SameTop: 0.97}, Limits: audit.Limits{BPB: 0.05, Accuracy: 3}})
	if rep.Verdict != audit.Fail {
		t.Fatalf("fixture verdict %s", rep.Verdict)
	}
	return rep
}

// The artifact input audits the scored GGUF: the request carries it and
// the parsed limits, the comment and the job summary carry the audit's
// section, and a failed audit fails the job under fail-on regression.
func TestActionAuditsArtifact(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = w.scorer.scores[baseSHA] // no regression: only the audit fails
	rep := failedAudit(t)
	var got action.AuditRequest
	w.audit = func(ctx context.Context, req action.AuditRequest) (*audit.Report, error) {
		got = req
		return rep, nil
	}
	o := w.run("pull_request", prPayload(12), map[string]string{"model": model, "revision": headSHA,
		"baseline": "revision:" + baseSHA, "artifact": "Q4_0", "max-degradation": "bpb=0.05,accuracy=3",
		"server-url": "https://evals.example", "server-token": "srv"})
	if o.err != nil {
		t.Fatalf("%v\n%s", o.err, o.log)
	}
	if _, err := os.Stat(got.Reference); err != nil || got.Artifact != "Q4_0" || got.Limits != (audit.Limits{BPB: 0.05, Accuracy: 3}) {
		t.Errorf("audit request %+v (%v)", got, err)
	}
	// Filed as the head runs are: the model's commit and the PR's.
	if got.ModelRevision != headSHA || got.Git.Repo != repo || got.Git.PR == nil || *got.Git.PR != 12 {
		t.Errorf("audit request revision %q git %+v, want %s of %s, PR 12", got.ModelRevision, got.Git, headSHA, repo)
	}
	if ups := strings.Join(w.server.uploads, ", "); !strings.HasSuffix(ups, "audit fail") {
		t.Errorf("uploads %q, want the audit after the runs", ups)
	}
	if o.res.ExitCode != 1 || !strings.Contains(o.log, "::error title=udgam-ci%3A artifact audit failed::artifact Q4_0: accuracy changed by") {
		t.Errorf("exit %d, log:\n%s", o.res.ExitCode, o.log)
	}
	var md strings.Builder
	if err := audit.RenderMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	cs := ourComments(w.gh, 12)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, md.String()) || !strings.Contains(o.summary, md.String()) ||
		!strings.Contains(cs[0].Body, "https://evals.example/audits/a1") {
		t.Errorf("the comment or summary lacks the audit section:\n%v\n%s", cs, o.summary)
	}
}

func TestActionArtifactInputChecked(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	o := w.run("pull_request", prPayload(1), map[string]string{"model": model, "revision": headSHA,
		"artifact": "q3_K", "max-degradation": "kl=1"})
	if o.err == nil || !strings.Contains(o.log, "input artifact: artifact \"q3_K\": not a quantization type") ||
		!strings.Contains(o.log, "input max-degradation:") {
		t.Errorf("err %v, log:\n%s", o.err, o.log)
	}
}
