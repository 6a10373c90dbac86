package actiontest

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// repoData is what the fake knows of the repository beyond comments and
// Check runs: files at commits (the contents API), issue events (who
// labeled a pull request) and collaborators' roles.
type repoData struct {
	files  map[string]map[string]string // ref -> path -> content
	events map[int][]*IssueEvent        // by issue (pull request) number
	roles  map[string]string            // login -> role_name
}

// IssueEvent is a labeled or unlabeled event of an issue, as
// GET /repos/{owner}/{repo}/issues/{issue_number}/events lists it.
type IssueEvent struct {
	ID        int64       `json:"id"`
	NodeID    string      `json:"node_id"`
	URL       string      `json:"url"`
	Actor     User        `json:"actor"`
	Event     string      `json:"event"`
	CommitID  *string     `json:"commit_id"`
	CommitURL *string     `json:"commit_url"`
	CreatedAt time.Time   `json:"created_at"`
	Label     *EventLabel `json:"label,omitempty"`
	// PerformedViaGitHubApp is always null here.
	PerformedViaGitHubApp *struct{} `json:"performed_via_github_app"`
}

// EventLabel is the label a labeled or unlabeled event names.
type EventLabel struct {
	Name  string `json:"name"`
	Color string `json:"color"`
}

// SetFile stores a file's content at ref (a commit sha or a branch), for
// GET /repos/{owner}/{repo}/contents/{path}?ref=REF.
func (g *GitHub) SetFile(ref, path, content string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.files == nil {
		g.files = map[string]map[string]string{}
	}
	if g.files[ref] == nil {
		g.files[ref] = map[string]string{}
	}
	g.files[ref][path] = content
}

// Label records actor applying label to issue (or pull request) n.
func (g *GitHub) Label(n int, label, actor string) { g.labelEvent(n, "labeled", label, actor) }

// Unlabel records actor removing label from issue n.
func (g *GitHub) Unlabel(n int, label, actor string) { g.labelEvent(n, "unlabeled", label, actor) }

func (g *GitHub) labelEvent(n int, event, label, actor string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.events == nil {
		g.events = map[int][]*IssueEvent{}
	}
	g.nextID++
	g.events[n] = append(g.events[n], &IssueEvent{
		ID: g.nextID, NodeID: fmt.Sprintf("LE_%d", g.nextID), URL: fmt.Sprintf("%s/api/v3/repos/%s/issues/events/%d", g.URL, g.Repo, g.nextID),
		Actor: User{Login: actor}, Event: event, CreatedAt: time.Date(2026, 11, 30, 12, 0, len(g.events[n]), 0, time.UTC),
		Label: &EventLabel{Name: label, Color: "d73a4a"},
	})
}

// SetRole gives login a role on the repository: admin, maintain, write,
// triage, read or a custom role's name. Others are no collaborators.
func (g *GitHub) SetRole(login, role string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.roles == nil {
		g.roles = map[string]string{}
	}
	g.roles[login] = role
}

// serveRepo answers the contents, issue events and collaborator
// permission routes; false when repoPath is none of them.
func (g *GitHub) serveRepo(w http.ResponseWriter, r *http.Request, repoPath string) bool {
	if r.Method != http.MethodGet {
		return false
	}
	parts := strings.Split(repoPath, "/")
	switch {
	case parts[0] == "contents" && len(parts) > 1:
		g.content(w, r, strings.Join(parts[1:], "/"))
	case len(parts) == 3 && parts[0] == "issues" && parts[2] == "events":
		n, err := strconv.Atoi(parts[1])
		if err != nil {
			writeError(w, http.StatusNotFound, "Not Found")
			return true
		}
		writePage(g, w, r, g.events[n], g.eventJSON)
	case len(parts) == 3 && parts[0] == "collaborators" && parts[2] == "permission":
		role, ok := g.roles[parts[1]]
		if !ok {
			writeError(w, http.StatusNotFound, "Not Found")
			return true
		}
		// permission is the legacy base role: maintain reads as write,
		// triage as read; role_name is the role itself.
		legacy := map[string]string{"maintain": "write", "triage": "read"}[role]
		if legacy == "" {
			legacy = role
		}
		user := g.userJSON(parts[1])
		user["role_name"] = role
		writeJSON(w, map[string]any{"permission": legacy, "role_name": role, "user": user})
	default:
		return false
	}
	return true
}

// content answers one file as the contents API does: base64 in lines of
// 60 characters; 404 when ref has no such file.
func (g *GitHub) content(w http.ResponseWriter, r *http.Request, p string) {
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		ref = "main"
	}
	body, ok := g.files[ref][p]
	if !ok {
		g.dir(w, ref, p)
		return
	}
	enc := base64.StdEncoding.EncodeToString([]byte(body))
	var lines []string
	for len(enc) > 60 {
		lines, enc = append(lines, enc[:60]), enc[60:]
	}
	lines = append(lines, enc)
	self := fmt.Sprintf("%s/api/v3/repos/%s/contents/%s?ref=%s", g.URL, g.Repo, p, url.QueryEscape(ref))
	html := fmt.Sprintf("%s/%s/blob/%s/%s", g.URL, g.Repo, ref, p)
	sha := fmt.Sprintf("%040x", len(body)) // a stand-in blob sha
	git := fmt.Sprintf("%s/api/v3/repos/%s/git/blobs/%s", g.URL, g.Repo, sha)
	writeJSON(w, map[string]any{
		"type": "file", "encoding": "base64", "size": len(body), "name": path.Base(p), "path": p,
		"content": strings.Join(lines, "\n") + "\n", "sha": sha, "url": self, "git_url": git, "html_url": html,
		"download_url": fmt.Sprintf("%s/raw/%s/%s/%s", g.URL, g.Repo, ref, p),
		"_links":       map[string]string{"self": self, "git": git, "html": html},
	})
}

// dir answers a directory as the contents API does, an array of its
// entries; 404 when ref has nothing under p.
func (g *GitHub) dir(w http.ResponseWriter, ref, p string) {
	var entries []map[string]any
	seen := map[string]bool{}
	for _, f := range slices.Sorted(maps.Keys(g.files[ref])) {
		rest, ok := strings.CutPrefix(f, p+"/")
		if !ok {
			continue
		}
		name, _, sub := strings.Cut(rest, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		kind, size := "file", len(g.files[ref][f])
		if sub {
			kind, size = "dir", 0
		}
		full := p + "/" + name
		self := fmt.Sprintf("%s/api/v3/repos/%s/contents/%s?ref=%s", g.URL, g.Repo, full, url.QueryEscape(ref))
		html := fmt.Sprintf("%s/%s/tree/%s/%s", g.URL, g.Repo, ref, full)
		sha := fmt.Sprintf("%040x", size)
		git := fmt.Sprintf("%s/api/v3/repos/%s/git/trees/%s", g.URL, g.Repo, sha)
		entries = append(entries, map[string]any{"type": kind, "size": size, "name": name, "path": full, "sha": sha,
			"url": self, "git_url": git, "html_url": html, "download_url": nil,
			"_links": map[string]string{"self": self, "git": git, "html": html}})
	}
	if len(entries) == 0 {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, entries)
}
