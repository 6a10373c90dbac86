package actiontest

import (
	"fmt"
	"strings"
	"time"
)

// The fake's answers carry every field GitHub's description marks required
// for the object (issue-comment, simple-user, check-run, integration), with
// values shaped as github.com gives them; the tests' own views (Comment,
// CheckRun) stay small.

// created is the fake's clock: every object is made at this instant.
var created = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func (g *GitHub) commentJSON(c *Comment) map[string]any {
	return map[string]any{
		"id":                 c.ID,
		"node_id":            nodeID("IC", c.ID),
		"url":                fmt.Sprintf("%s/repos/%s/issues/comments/%d", g.APIURL(), g.Repo, c.ID),
		"html_url":           c.HTMLURL,
		"issue_url":          fmt.Sprintf("%s/repos/%s/issues/%d", g.APIURL(), g.Repo, c.pr),
		"body":               c.Body,
		"user":               g.userJSON(c.User.Login),
		"created_at":         stamp(c.Created),
		"updated_at":         stamp(c.Updated),
		"author_association": "NONE",
	}
}

// userJSON is a simple-user; a login ending in [bot] is a Bot, as GitHub
// shows github-actions[bot].
func (g *GitHub) userJSON(login string) map[string]any {
	var id int64 = 1
	for _, r := range login {
		id = id*31 + int64(r)%1000003
	}
	id = id&0xffffff + 1
	kind := "User"
	if strings.HasSuffix(login, "[bot]") {
		kind = "Bot"
	}
	api := g.APIURL() + "/users/" + login
	return map[string]any{
		"login":               login,
		"id":                  id,
		"node_id":             nodeID("U", id),
		"avatar_url":          fmt.Sprintf("%s/avatars/u/%d?v=4", g.URL, id),
		"gravatar_id":         "",
		"url":                 api,
		"html_url":            g.URL + "/" + login,
		"followers_url":       api + "/followers",
		"following_url":       api + "/following{/other_user}",
		"gists_url":           api + "/gists{/gist_id}",
		"starred_url":         api + "/starred{/owner}{/repo}",
		"subscriptions_url":   api + "/subscriptions",
		"organizations_url":   api + "/orgs",
		"repos_url":           api + "/repos",
		"events_url":          api + "/events{/privacy}",
		"received_events_url": api + "/received_events",
		"type":                kind,
		"user_view_type":      "public",
		"site_admin":          false,
	}
}

// eventJSON is a labeled-issue-event (or unlabeled) as the issue events
// API lists it.
func (g *GitHub) eventJSON(e *IssueEvent) any {
	out := map[string]any{
		"id":                       e.ID,
		"node_id":                  e.NodeID,
		"url":                      e.URL,
		"actor":                    g.userJSON(e.Actor.Login),
		"event":                    e.Event,
		"commit_id":                nil,
		"commit_url":               nil,
		"created_at":               stamp(e.CreatedAt),
		"performed_via_github_app": nil,
	}
	if e.Label != nil {
		out["label"] = map[string]any{"name": e.Label.Name, "color": e.Label.Color}
	}
	return out
}

// checkRunJSON is a check-run as the Checks API gives it: the annotations
// are not in it (only their count and where to list them), and a run the
// Action writes belongs to the GitHub Actions app.
func (g *GitHub) checkRunJSON(c *CheckRun) map[string]any {
	url := fmt.Sprintf("%s/repos/%s/check-runs/%d", g.APIURL(), g.Repo, c.ID)
	var completed, conclusion, details any
	if c.Status == "completed" {
		completed = stamp(created)
	}
	if c.Conclusion != "" {
		conclusion = c.Conclusion
	}
	if c.DetailsURL != "" {
		details = c.DetailsURL
	}
	return map[string]any{
		"id":           c.ID,
		"node_id":      nodeID("CR", c.ID),
		"name":         c.Name,
		"head_sha":     c.HeadSHA,
		"external_id":  "",
		"url":          url,
		"html_url":     c.HTMLURL,
		"details_url":  details,
		"status":       c.Status,
		"conclusion":   conclusion,
		"started_at":   stamp(created),
		"completed_at": completed,
		"output": map[string]any{
			"title":             c.Output.Title,
			"summary":           c.Output.Summary,
			"text":              nil,
			"annotations_count": len(c.Annotations),
			"annotations_url":   url + "/annotations",
		},
		"check_suite":   map[string]any{"id": c.ID + 1_000_000},
		"app":           g.actionsApp(),
		"pull_requests": []any{},
	}
}

// actionsApp is the GitHub Actions app, which owns the runs a workflow's
// GITHUB_TOKEN writes.
func (g *GitHub) actionsApp() map[string]any {
	return map[string]any{
		"id":           15368,
		"slug":         "github-actions",
		"node_id":      "MDM6QXBwMTUzNjg=",
		"owner":        g.userJSON("github"),
		"name":         "GitHub Actions",
		"description":  "Automate your workflow from idea to production",
		"external_url": "https://help.github.com/en/actions",
		"html_url":     g.URL + "/apps/github-actions",
		"created_at":   "2018-07-30T09:30:17Z",
		"updated_at":   "2019-12-10T19:04:12Z",
		"permissions":  map[string]any{"checks": "write", "issues": "write", "metadata": "read"},
		"events":       []any{"check_run", "check_suite"},
	}
}

func nodeID(kind string, id int64) string { return fmt.Sprintf("%s_kwDO%08d", kind, id) }

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
