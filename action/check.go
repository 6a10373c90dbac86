package action

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"
	"github.com/udgamlabs/udgam-ci/action/failon"
)

// Check conclusions, as the Checks API names them.
const (
	CheckSuccess = "success" // compared, and nothing fail-on counts was found
	CheckFailure = "failure" // fail-on made the job fail
	CheckNeutral = "neutral" // nothing compared, or only warnings
)

// CheckName is the Check run of one model: branch protection can require
// "udgam-ci: MODEL" as a status check.
func CheckName(model string) string { return "udgam-ci: " + model }

// Check is what the Check run of one model shows.
type Check struct {
	Name, HeadSHA string
	Conclusion    string
	Title         string // one line: the verdict
	Summary       string // Markdown: the job summary
	DetailsURL    string // the workflow run
	Annotations   []*github.CheckRunAnnotation
}

// CheckResult says what UpsertCheck did.
type CheckResult struct {
	ID      int64
	URL     string
	Created bool
}

// maxCheckSummary is the Checks API's limit on output.summary.
const maxCheckSummary = 65535

// UpsertCheck keeps one completed Check run named c.Name on the commit: it
// updates the run of that name the commit already has (a rerun of the job)
// or creates one.
func UpsertCheck(ctx context.Context, gh *github.Client, repo string, c Check) (CheckResult, error) {
	owner, name, ok := splitRepo(repo)
	if !ok {
		return CheckResult{}, fmt.Errorf("check run on %q: repository is not OWNER/NAME", repo)
	}
	if c.HeadSHA == "" {
		return CheckResult{}, fmt.Errorf("check run %q: no commit sha", c.Name)
	}
	summary := c.Summary
	if r := []rune(summary); len(r) > maxCheckSummary {
		summary = string(r[:maxCheckSummary-60]) + "\n\n… cut; the job summary has the whole report.\n"
	}
	out := &github.CheckRunOutput{Title: github.String(c.Title), Summary: github.String(summary), Annotations: c.Annotations}
	list, _, err := gh.Checks.ListCheckRunsForRef(ctx, owner, name, c.HeadSHA, &github.ListCheckRunsOptions{CheckName: github.String(c.Name)})
	if err != nil {
		return CheckResult{}, fmt.Errorf("list check runs of %s@%s: %w", repo, c.HeadSHA, err)
	}
	var details *string
	if c.DetailsURL != "" {
		details = github.String(c.DetailsURL)
	}
	for _, run := range list.CheckRuns {
		if run.GetName() != c.Name {
			continue
		}
		updated, _, err := gh.Checks.UpdateCheckRun(ctx, owner, name, run.GetID(), github.UpdateCheckRunOptions{
			Name: c.Name, Status: github.String("completed"), Conclusion: github.String(c.Conclusion), Output: out, DetailsURL: details,
		})
		if err != nil {
			return CheckResult{}, fmt.Errorf("update check run %d on %s: %w", run.GetID(), repo, err)
		}
		return CheckResult{ID: updated.GetID(), URL: updated.GetHTMLURL()}, nil
	}
	created, _, err := gh.Checks.CreateCheckRun(ctx, owner, name, github.CreateCheckRunOptions{
		Name: c.Name, HeadSHA: c.HeadSHA, Status: github.String("completed"), Conclusion: github.String(c.Conclusion), Output: out, DetailsURL: details,
	})
	if err != nil {
		return CheckResult{}, fmt.Errorf("create check run %q on %s@%s: %w", c.Name, repo, c.HeadSHA, err)
	}
	return CheckResult{ID: created.GetID(), URL: created.GetHTMLURL(), Created: true}, nil
}

// checkOf is the Check run of this action run: the verdict under fail-on
// as its conclusion, a warning annotation per regression.
func (r *actionRun) checkOf(res Result, j job, summary string) Check {
	fs := r.findings(res, j)
	fails, line := failon.Verdict(r.in.FailOn, fs)
	c := Check{Name: CheckName(r.in.ModelName), HeadSHA: r.ev.SHA, Title: line, Summary: summary, DetailsURL: r.ev.RunURL}
	switch {
	case fails:
		c.Conclusion = CheckFailure
	case len(res.Comparisons) == 0 || len(fs) > 0:
		c.Conclusion = CheckNeutral
		if len(res.Comparisons) == 0 {
			c.Title = "Scored; nothing compared (no baseline)"
		}
	default:
		c.Conclusion = CheckSuccess
	}
	// Branch protection shows the title: it must say the gate was
	// loosened, or refused, even when the verdict line had no room.
	for _, f := range j.gate.finding() {
		if reason := strings.TrimPrefix(f.Title, "udgam-ci: "); !strings.Contains(c.Title, reason) {
			c.Title += " Also: " + reason + "."
		}
	}
	path := r.workflowPath()
	for _, f := range fs {
		level := "warning"
		if f.Fails {
			level = "failure"
		}
		c.Annotations = append(c.Annotations, &github.CheckRunAnnotation{
			Path: github.String(path), StartLine: github.Int(1), EndLine: github.Int(1),
			AnnotationLevel: github.String(level), Title: github.String(f.Title), Message: github.String(f.Msg),
		})
	}
	return c
}

// workflowPath is the workflow file the annotations point at: GitHub
// needs a path in the repository, and the findings belong to no line.
func (r *actionRun) workflowPath() string {
	// GITHUB_WORKFLOW_REF is OWNER/NAME/.github/workflows/FILE@REF.
	ref, _, _ := strings.Cut(r.d.Getenv("GITHUB_WORKFLOW_REF"), "@")
	if p, ok := strings.CutPrefix(ref, r.ev.Repo+"/"); ok && p != "" {
		return p
	}
	return ".github/workflows"
}

// check creates or updates the model's Check run on a pull request's head
// commit, where branch protection reads it. Failing to (a fork PR's
// read-only token, no checks: write) costs the check, never the result.
func (r *actionRun) check(ctx context.Context, res Result, j job, summary string) *CheckResult {
	if r.ev.PR == 0 || r.in.GitHubToken == "" || r.ev.SHA == "" {
		return nil
	}
	gh, err := NewGitHubClient(r.ev.APIURL, r.in.GitHubToken, r.d.GitHub)
	if err != nil {
		r.warn("no check run", "%v", err)
		return nil
	}
	cr, err := UpsertCheck(ctx, gh, r.ev.Repo, r.checkOf(res, j, summary))
	if err != nil {
		r.warn("no check run", "%v (the job needs permissions: checks: write; a pull request from a fork gets a read-only token: see the workflow_run example)", err)
		return nil
	}
	r.a.Infof("check run %q: %s", CheckName(r.in.ModelName), cr.URL)
	return &cr
}
