package action

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v66/github"
)

// NewGitHubClient returns a REST client for apiURL (GITHUB_API_URL: the
// public API or a GitHub Enterprise /api/v3 base) authenticated with token.
// base carries the requests (http.DefaultTransport when nil).
func NewGitHubClient(apiURL, token string, base http.RoundTripper) (*github.Client, error) {
	u, err := url.Parse(strings.TrimRight(apiURL, "/") + "/")
	if err != nil {
		return nil, fmt.Errorf("GitHub API URL %q: %w", apiURL, err)
	}
	c := github.NewClient(&http.Client{Transport: base}).WithAuthToken(token)
	c.BaseURL = u
	return c, nil
}

// CommentResult says what UpsertComment did.
type CommentResult struct {
	ID      int64
	URL     string
	Created bool // false when an existing comment was edited
	// Unchanged: the comment already said this, so it was not edited (an
	// edit would notify and bump it for nothing).
	Unchanged bool
}

// UpsertComment keeps exactly one comment carrying marker on a pull request:
// it edits the first comment whose body contains marker (only when the body
// changes), or creates one when none does. Every page of comments is searched, so a long thread still finds
// its comment instead of adding another.
func UpsertComment(ctx context.Context, gh *github.Client, repo string, pr int, marker, body string) (CommentResult, error) {
	owner, name, ok := splitRepo(repo)
	if !ok {
		return CommentResult{}, fmt.Errorf("comment on %q: repository is not OWNER/NAME", repo)
	}
	if !strings.Contains(body, marker) {
		// Without the marker the next run could not find this comment.
		body = marker + "\n" + body
	}
	body = fitComment(body)
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		comments, resp, err := gh.Issues.ListComments(ctx, owner, name, pr, opts)
		if err != nil {
			return CommentResult{}, fmt.Errorf("list comments of %s#%d: %w", repo, pr, err)
		}
		for _, c := range comments {
			if strings.Contains(c.GetBody(), marker) {
				if c.GetBody() == body {
					return CommentResult{ID: c.GetID(), URL: c.GetHTMLURL(), Unchanged: true}, nil
				}
				edited, _, err := gh.Issues.EditComment(ctx, owner, name, c.GetID(), &github.IssueComment{Body: github.String(body)})
				if err != nil {
					return CommentResult{}, fmt.Errorf("edit comment %d on %s#%d: %w", c.GetID(), repo, pr, err)
				}
				return CommentResult{ID: edited.GetID(), URL: edited.GetHTMLURL()}, nil
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	created, _, err := gh.Issues.CreateComment(ctx, owner, name, pr, &github.IssueComment{Body: github.String(body)})
	if err != nil {
		return CommentResult{}, fmt.Errorf("create comment on %s#%d: %w", repo, pr, err)
	}
	return CommentResult{ID: created.GetID(), URL: created.GetHTMLURL(), Created: true}, nil
}

// maxComment is GitHub's limit on a comment body, in characters.
const maxComment = 65536

// fitComment cuts a body GitHub would refuse, keeping whole lines and
// saying where the rest is.
func fitComment(body string) string {
	const note = "\n\n… cut to fit a GitHub comment; the job summary has the whole report.\n"
	if len([]rune(body)) <= maxComment {
		return body
	}
	r := []rune(body)[:maxComment-len([]rune(note))]
	cut := string(r)
	if i := strings.LastIndex(cut, "\n"); i > 0 {
		cut = cut[:i]
	}
	return cut + note
}
