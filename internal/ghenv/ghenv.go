// Package ghenv reads which commit a run belongs to from the variables
// GitHub Actions sets. It is the one reader of them: the Action's event and
// the score commands' --git-* defaults both come from here, and the
// scoring core takes a plain runfile.Git. It imports nothing of udgam-ci's:
// callers convert its Commit to runfile.Git (the same fields).
package ghenv

import (
	"regexp"
	"strconv"
)

// Commit is which commit a run belongs to, as runfile.Git holds it.
type Commit struct {
	Repo string // OWNER/NAME
	SHA  string
	Ref  string // "main" or the PR's head ref
	PR   *int
}

var pullRef = regexp.MustCompile(`^refs/pull/([0-9]+)/(merge|head)$`)

// Git is GITHUB_REPOSITORY, GITHUB_SHA, GITHUB_HEAD_REF (a pull request's
// branch) or else GITHUB_REF_NAME, and the PR number from GITHUB_REF
// (refs/pull/N/merge). A nil getenv reads nothing.
func Git(getenv func(string) string) Commit {
	if getenv == nil {
		return Commit{}
	}
	g := Commit{Repo: getenv("GITHUB_REPOSITORY"), SHA: getenv("GITHUB_SHA"), Ref: getenv("GITHUB_HEAD_REF")}
	if g.Ref == "" {
		g.Ref = getenv("GITHUB_REF_NAME")
	}
	if m := pullRef.FindStringSubmatch(getenv("GITHUB_REF")); m != nil {
		if pr, err := strconv.Atoi(m[1]); err == nil && pr > 0 {
			g.PR = &pr
		}
	}
	return g
}

// Fill fills the fields of g that are empty (flags not given) from Git.
func Fill(g Commit, getenv func(string) string) Commit {
	env := Git(getenv)
	if g.Repo == "" {
		g.Repo = env.Repo
	}
	if g.SHA == "" {
		g.SHA = env.SHA
	}
	if g.Ref == "" {
		g.Ref = env.Ref
	}
	if g.PR == nil {
		g.PR = env.PR
	}
	return g
}
