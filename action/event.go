package action

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/udgamlabs/udgam-ci/internal/ghenv"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Event is what the action needs to know about the workflow run that
// started it.
type Event struct {
	Kind      string // GITHUB_EVENT_NAME: pull_request, pull_request_target, push, workflow_run, ...
	Repo      string // OWNER/NAME
	SHA       string // the commit being evaluated
	Ref       string // branch name: the PR's head ref, or the pushed branch
	BaseRef   string // the PR's base branch
	BaseSHA   string // the PR's base commit, where the gate's policy is read
	PR        int    // 0 when the run belongs to no pull request
	Default   string // the repository's default branch, when the payload names it
	APIURL    string // REST base, https://api.github.com or GHES's /api/v3
	ServerURL string // https://github.com or the GHES host
	RunURL    string // this workflow run's page
}

// splitRepo splits a GitHub repository id into the owner and name the REST
// API takes apart; ok is false when repo is not one (runfile.IsGitRepo).
func splitRepo(repo string) (owner, name string, ok bool) {
	if !runfile.IsGitRepo(repo) {
		return "", "", false
	}
	owner, name, _ = strings.Cut(repo, "/")
	return owner, name, true
}

// IsBaselinePush reports whether this run records a new baseline: a push to
// the default branch (or to the branch PRs are compared with).
func (e Event) IsBaselinePush() bool {
	if e.Kind != "push" || e.PR != 0 {
		return false
	}
	return e.Default == "" || e.Ref == e.Default
}

// payload holds the parts of the event JSON the action reads; the shapes of
// pull_request, push and workflow_run events overlap only partly.
type payload struct {
	Number      int     `json:"number"`
	PullRequest *prJSON `json:"pull_request"`
	Ref         string  `json:"ref"`
	After       string  `json:"after"`
	Repository  struct {
		FullName      string `json:"full_name"`
		DefaultBranch string `json:"default_branch"`
	} `json:"repository"`
	WorkflowRun *struct {
		Event        string   `json:"event"`
		HeadBranch   string   `json:"head_branch"`
		HeadSHA      string   `json:"head_sha"`
		PullRequests []prJSON `json:"pull_requests"`
	} `json:"workflow_run"`
}

type prJSON struct {
	Number int `json:"number"`
	Head   struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"base"`
}

// ReadEvent reads GITHUB_* variables and the event payload at
// GITHUB_EVENT_PATH.
func ReadEvent(getenv func(string) string) (Event, error) {
	// The PR number comes from the payload, which knows it for every kind
	// of event; GITHUB_REF knows it only for pull_request.
	g := ghenv.Git(getenv)
	e := Event{
		Kind:      getenv("GITHUB_EVENT_NAME"),
		Repo:      g.Repo,
		SHA:       g.SHA,
		Ref:       g.Ref,
		BaseRef:   getenv("GITHUB_BASE_REF"),
		APIURL:    strings.TrimRight(getenv("GITHUB_API_URL"), "/"),
		ServerURL: strings.TrimRight(getenv("GITHUB_SERVER_URL"), "/"),
	}
	if e.APIURL == "" {
		e.APIURL = "https://api.github.com"
	}
	if e.ServerURL == "" {
		e.ServerURL = "https://github.com"
	}
	if path := getenv("GITHUB_EVENT_PATH"); path != "" {
		if err := e.readPayload(path); err != nil {
			return e, err
		}
	}
	if id := getenv("GITHUB_RUN_ID"); id != "" && e.Repo != "" {
		e.RunURL = fmt.Sprintf("%s/%s/actions/runs/%s", e.ServerURL, e.Repo, id)
	}
	return e, nil
}

// readPayload fills what the event JSON knows better than the variables.
func (e *Event) readPayload(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read event %s: %w", path, err)
	}
	var p payload
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("read event %s: %w", path, err)
	}
	if e.Repo == "" {
		e.Repo = p.Repository.FullName
	}
	e.Default = p.Repository.DefaultBranch

	switch {
	case p.PullRequest != nil: // pull_request, pull_request_target
		e.PR = p.PullRequest.Number
		e.Ref = p.PullRequest.Head.Ref
		e.BaseRef, e.BaseSHA = p.PullRequest.Base.Ref, p.PullRequest.Base.SHA
		// pull_request_target runs on the base commit; what is evaluated is
		// the PR's head, so record that.
		if p.PullRequest.Head.SHA != "" {
			e.SHA = p.PullRequest.Head.SHA
		}
	case p.WorkflowRun != nil:
		e.Ref = p.WorkflowRun.HeadBranch
		e.SHA = p.WorkflowRun.HeadSHA
		if len(p.WorkflowRun.PullRequests) > 0 {
			pr := p.WorkflowRun.PullRequests[0]
			e.PR = pr.Number
			e.BaseRef, e.BaseSHA = pr.Base.Ref, pr.Base.SHA
		} else if p.WorkflowRun.Event == "push" {
			// The triggering workflow ran on a push: treat it as one.
			e.Kind = "push"
		}
	case strings.HasPrefix(p.Ref, "refs/heads/"): // push
		e.Ref = strings.TrimPrefix(p.Ref, "refs/heads/")
		if p.After != "" {
			e.SHA = p.After
		}
	}
	return nil
}
