package action

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/udgamlabs/udgam-ci/action/failon"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// publish writes the job summary and, on a pull request, the PR comment.
func (r *actionRun) publish(ctx context.Context, res *Result, j job, links []report.Link, flags []string) error {
	if len(res.Comparisons) == 0 {
		notes := r.notes
		if j.scan.report != nil {
			notes = append(slices.Clone(notes), "Contamination: "+j.scan.report.Line())
		}
		md := scoresMarkdown(r.in.ModelName, res.Heads, links, notes) + report.AnchorMarkdown(res.Anchors) + gateMarkdown(j.gate.lines()) + auditSection(j.audit)
		r.summary(md)
		res.Check = r.check(ctx, *res, j, md)
		return nil
	}
	heads := map[string]*runfile.Run{}
	for _, h := range res.Heads {
		heads[h.Header.Test] = h
	}
	_, verdict := failon.Verdict(r.in.FailOn, r.findings(*res, j))
	c := report.Comment{Model: r.in.ModelName, Tests: res.Comparisons, RunURLs: links, ServerFlags: flags,
		Contamination: r.contaminationView(res.Comparisons, j.scan, j.bases, heads), Verdict: verdict, Gate: j.gate.lines(),
		Anchors: res.Anchors}
	var body strings.Builder
	if err := report.RenderSummary(&body, c); err != nil {
		return err
	}
	body.WriteString(auditSection(j.audit))
	r.summary(body.String())
	res.Check = r.check(ctx, *res, j, body.String())
	if r.ev.PR != 0 && r.in.Comment {
		res.Comment = r.comment(ctx, c, auditSection(j.audit))
	}
	return nil
}

// findings are the gate's findings on what the job found.
func (r *actionRun) findings(res Result, j job) []failon.Finding {
	return failon.Findings(r.in.FailOn, failon.Facts{Model: r.in.ModelName,
		Comparisons: res.Comparisons, Mismatch: res.Mismatch, Regressions: res.Regressions,
		Drifts: res.Drifts, AnchorErrors: res.AnchorErrors,
		Audit: j.audit, Artifact: r.in.Artifact, Scan: j.scan.report, ScanPath: j.scan.path,
		Policy: j.gate.finding()})
}

// gate turns the findings into the exit code fail-on asks for, with an
// error annotation naming each reason.
func (r *actionRun) gate(res Result, j job) int {
	code := 0
	for _, f := range r.findings(res, j) {
		title := map[string]string{"title": f.Title}
		if f.Fails {
			r.a.WithFieldsMap(title).Errorf("%s", f.Msg)
			code = 1
		} else {
			r.a.WithFieldsMap(title).Warningf("%s", f.Msg)
		}
	}
	return code
}

// upload sends every head run; a failing server costs the links, never the
// evaluation.
func (r *actionRun) upload(ctx context.Context, heads []*runfile.Run) ([]report.Link, []string) {
	var links []report.Link
	var flags []string
	baseRef := r.ev.BaseRef
	if r.ev.IsBaselinePush() {
		baseRef = r.ev.Ref
	}
	for _, h := range heads {
		up, err := r.srv.Upload(ctx, h, baseRef)
		if err != nil {
			r.warn("report server unavailable", "upload of %s run %s to %s failed; the run file stays in %s: %v",
				h.Header.Test, h.Header.ID, r.in.ServerURL, r.in.WorkDir, err)
			continue
		}
		r.a.Infof("uploaded %s run %s: %s", h.Header.Test, h.Header.ID, up.URL)
		links = append(links, report.Link{Text: h.Header.Test + " run", URL: up.URL})
		if len(up.Flags) > 0 {
			flags = append(flags, fmt.Sprintf("%s: the server's baseline has other settings: %s", h.Header.Test, runfile.FormatDiffs(up.Flags)))
		}
	}
	return links, flags
}

// comment keeps the model's one comment on the pull request, c followed
// by the audit's section (auditMD).
func (r *actionRun) comment(ctx context.Context, c report.Comment, auditMD string) *CommentResult {
	if r.in.GitHubToken == "" {
		r.warn("no PR comment", "no github-token: the comparison is in the job summary only")
		return nil
	}
	var body strings.Builder
	if err := report.RenderComment(&body, c); err != nil {
		r.warn("no PR comment", "render comment: %v", err)
		return nil
	}
	body.WriteString(auditMD)
	gh, err := NewGitHubClient(r.ev.APIURL, r.in.GitHubToken, r.d.GitHub)
	if err != nil {
		r.warn("no PR comment", "%v", err)
		return nil
	}
	res, err := UpsertComment(ctx, gh, r.ev.Repo, r.ev.PR, report.Marker(r.in.ModelName), body.String())
	if err != nil {
		// Fork PRs get a read-only token: say how to fix it, keep the result.
		r.warn("no PR comment", "%v (a pull request from a fork gets a read-only token: see the pull_request_target / workflow_run example)", err)
		return nil
	}
	verb := "edited"
	switch {
	case res.Created:
		verb = "created"
	case res.Unchanged:
		verb = "left unchanged"
	}
	r.a.Infof("%s PR comment %d: %s", verb, res.ID, res.URL)
	return &res
}

// warn shows a warning on the log and keeps it for the job summary.
func (r *actionRun) warn(title, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.a.WithFieldsMap(map[string]string{"title": "udgam-ci: " + title}).Warningf("%s", oneLine(msg))
	r.notes = append(r.notes, msg)
}

// summary writes the job summary; outside a runner it logs it.
func (r *actionRun) summary(md string) {
	if r.d.Getenv("GITHUB_STEP_SUMMARY") == "" {
		r.a.Infof("%s", md)
		return
	}
	r.a.AddStepSummary(md)
}
