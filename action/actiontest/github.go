// Package actiontest holds fakes for testing the Action end to end: a GitHub
// REST server that speaks the issue-comment and Check-run endpoints
// go-github uses.
package actiontest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Comment is a stored issue comment.
type Comment struct {
	ID      int64     `json:"id"`
	Body    string    `json:"body"`
	HTMLURL string    `json:"html_url"`
	User    User      `json:"user"`
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
	pr      int       // the issue or PR it is on
}

// User is a comment's author.
type User struct {
	Login string `json:"login"`
}

// GitHub is a fake GitHub REST API for one repository, served under
// /api/v3 as GitHub Enterprise does (so the client's base URL handling is
// exercised too).
type GitHub struct {
	*httptest.Server
	Repo     string // OWNER/NAME
	Token    string // required as "Authorization: Bearer TOKEN"
	PerPage  int    // comments per page when the client asks for more
	ReadOnly bool   // answer writes 403, as a fork PR's token gets

	mu       sync.Mutex
	nextID   int64
	comments map[int][]*Comment // by PR number
	checks   []*CheckRun
	log      []string
	repoData // files, issue events, collaborators' roles (repo.go)
}

// CheckRun is a stored Check run.
type CheckRun struct {
	ID          int64             `json:"id"`
	Name        string            `json:"name"`
	HeadSHA     string            `json:"head_sha"`
	Status      string            `json:"status"`
	Conclusion  string            `json:"conclusion"`
	DetailsURL  string            `json:"details_url,omitempty"`
	HTMLURL     string            `json:"html_url"`
	Output      CheckOutput       `json:"output"`
	Annotations []CheckAnnotation `json:"-"` // every annotation sent, in order
	Updates     int               `json:"-"` // PATCHes after the create
}

// CheckOutput is a Check run's title and summary.
type CheckOutput struct {
	Title       string            `json:"title"`
	Summary     string            `json:"summary"`
	Annotations []CheckAnnotation `json:"annotations,omitempty"`
}

// CheckAnnotation is one annotation of a Check run.
type CheckAnnotation struct {
	Path            string `json:"path"`
	StartLine       int    `json:"start_line"`
	EndLine         int    `json:"end_line"`
	AnnotationLevel string `json:"annotation_level"`
	Title           string `json:"title"`
	Message         string `json:"message"`
}

// Checks returns the stored Check runs in creation order.
func (g *GitHub) Checks() []CheckRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []CheckRun
	for _, c := range g.checks {
		out = append(out, *c)
	}
	return out
}

// NewGitHub starts a fake for repo accepting token.
func NewGitHub(t testing.TB, repo, token string) *GitHub {
	g := &GitHub{Repo: repo, Token: token, PerPage: 100, nextID: 1000, comments: map[int][]*Comment{}}
	g.Server = httptest.NewServer(conformTo(t, http.HandlerFunc(g.serve)))
	t.Cleanup(g.Close)
	return g
}

// APIURL is what GITHUB_API_URL holds on this fake.
func (g *GitHub) APIURL() string { return g.URL + "/api/v3" }

// Seed adds n comments by other users to a PR, so the action's comment is
// not on the first page.
func (g *GitHub) Seed(pr, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range n {
		g.add(pr, fmt.Sprintf("comment %d by a reviewer", i), "reviewer")
	}
}

// Comments returns a PR's comments in order.
func (g *GitHub) Comments(pr int) []Comment {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Comment
	for _, c := range g.comments[pr] {
		out = append(out, *c)
	}
	return out
}

// Log returns "METHOD path?query" of every request.
func (g *GitHub) Log() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.log...)
}

func (g *GitHub) add(pr int, body, login string) *Comment {
	g.nextID++
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	c := &Comment{ID: g.nextID, Body: body, User: User{Login: login}, Created: now, Updated: now,
		HTMLURL: fmt.Sprintf("%s/%s/pull/%d#issuecomment-%d", g.URL, g.Repo, pr, g.nextID), pr: pr}
	g.comments[pr] = append(g.comments[pr], c)
	return c
}

func (g *GitHub) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.log = append(g.log, r.Method+" "+r.URL.RequestURI())
	if r.Header.Get("Authorization") != "Bearer "+g.Token {
		writeError(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	repoPath, ok := strings.CutPrefix(r.URL.Path, "/api/v3/repos/"+g.Repo+"/")
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if strings.HasPrefix(repoPath, "check-runs") || strings.HasPrefix(repoPath, "commits/") {
		g.serveChecks(w, r, strings.Split(repoPath, "/"))
		return
	}
	if g.serveRepo(w, r, repoPath) {
		return
	}
	rest, ok := strings.CutPrefix(repoPath, "issues/")
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 2 && parts[1] == "comments" && r.Method == http.MethodGet:
		pr, err := strconv.Atoi(parts[0])
		if err != nil {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
		g.list(w, r, pr)
	case len(parts) == 2 && parts[1] == "comments" && r.Method == http.MethodPost:
		pr, err := strconv.Atoi(parts[0])
		if err != nil {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
		body, ok := g.readBody(w, r)
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(g.commentJSON(g.add(pr, body, "github-actions[bot]")))
	case len(parts) == 2 && parts[0] == "comments" && r.Method == http.MethodPatch:
		id, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
		body, ok := g.readBody(w, r)
		if !ok {
			return
		}
		for _, cs := range g.comments {
			for _, c := range cs {
				if c.ID == id {
					c.Body = body
					c.Updated = c.Updated.Add(time.Minute)
					writeJSON(w, g.commentJSON(c))
					return
				}
			}
		}
		writeError(w, http.StatusNotFound, "Not Found")
	default:
		writeError(w, http.StatusNotFound, "Not Found")
	}
}

// serveChecks answers GET commits/SHA/check-runs, POST check-runs and
// PATCH check-runs/ID, as the Checks API does (a read-only token gets 403
// on writes, as a fork PR's does).
func (g *GitHub) serveChecks(w http.ResponseWriter, r *http.Request, parts []string) {
	switch {
	case len(parts) == 3 && parts[0] == "commits" && parts[2] == "check-runs" && r.Method == http.MethodGet:
		name := r.URL.Query().Get("check_name")
		var runs []*CheckRun
		for _, c := range g.checks {
			if c.HeadSHA == parts[1] && (name == "" || c.Name == name) {
				runs = append(runs, c)
			}
		}
		wire := []map[string]any{}
		for _, c := range runs {
			wire = append(wire, g.checkRunJSON(c))
		}
		writeJSON(w, map[string]any{"total_count": len(runs), "check_runs": wire})
	case len(parts) == 1 && r.Method == http.MethodPost:
		var in CheckRun
		if !g.readCheck(w, r, &in) {
			return
		}
		if in.Name == "" || in.HeadSHA == "" {
			writeError(w, http.StatusUnprocessableEntity, "Invalid request: name and head_sha are required")
			return
		}
		g.nextID++
		in.ID = g.nextID
		in.HTMLURL = fmt.Sprintf("%s/%s/runs/%d", g.URL, g.Repo, in.ID)
		in.Annotations = append(in.Annotations, in.Output.Annotations...)
		g.checks = append(g.checks, &in)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(g.checkRunJSON(&in))
	case len(parts) == 2 && r.Method == http.MethodPatch:
		id, _ := strconv.ParseInt(parts[1], 10, 64)
		for _, c := range g.checks {
			if c.ID != id {
				continue
			}
			var in CheckRun
			if !g.readCheck(w, r, &in) {
				return
			}
			if in.Status != "" {
				c.Status = in.Status
			}
			if in.Conclusion != "" {
				c.Conclusion = in.Conclusion
			}
			if in.DetailsURL != "" {
				c.DetailsURL = in.DetailsURL
			}
			c.Output.Title, c.Output.Summary = in.Output.Title, in.Output.Summary
			c.Annotations = append(c.Annotations, in.Output.Annotations...)
			c.Updates++
			writeJSON(w, g.checkRunJSON(c))
			return
		}
		writeError(w, http.StatusNotFound, "Not Found")
	default:
		writeError(w, http.StatusNotFound, "Not Found")
	}
}

// readCheck decodes a Check run write, refusing what GitHub refuses: a
// completed run without a conclusion, an annotation without its fields.
func (g *GitHub) readCheck(w http.ResponseWriter, r *http.Request, in *CheckRun) bool {
	if g.ReadOnly {
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
		return false
	}
	if err := json.NewDecoder(r.Body).Decode(in); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	if in.Status == "completed" && in.Conclusion == "" {
		writeError(w, http.StatusUnprocessableEntity, "Invalid request: conclusion is required when status is completed")
		return false
	}
	for _, a := range in.Output.Annotations {
		if a.Path == "" || a.StartLine < 1 || a.EndLine < 1 || a.Message == "" ||
			(a.AnnotationLevel != "notice" && a.AnnotationLevel != "warning" && a.AnnotationLevel != "failure") {
			writeError(w, http.StatusUnprocessableEntity, "Invalid request: annotation needs path, start_line, end_line, annotation_level and message")
			return false
		}
	}
	return true
}

// list answers one page of a PR's comments.
func (g *GitHub) list(w http.ResponseWriter, r *http.Request, pr int) {
	writePage(g, w, r, g.comments[pr], func(c *Comment) any { return g.commentJSON(c) })
}

// writePage answers one page of all, with a Link header naming the next
// and last pages as GitHub does; toWire gives each element's JSON as
// GitHub writes it.
func writePage[T any](g *GitHub, w http.ResponseWriter, r *http.Request, all []T, toWire func(T) any) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 || per > 100 {
		per = 30
	}
	per = min(per, g.PerPage)
	page, _ := strconv.Atoi(q.Get("page"))
	if page <= 0 {
		page = 1
	}
	last := max(1, (len(all)+per-1)/per)
	lo, hi := min((page-1)*per, len(all)), min(page*per, len(all))
	link := func(p int, rel string) string {
		return fmt.Sprintf(`<%s%s?per_page=%d&page=%d>; rel="%s"`, g.URL, r.URL.Path, per, p, rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(page-1, "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	wire := make([]any, 0, hi-lo)
	for _, v := range all[lo:hi] {
		wire = append(wire, toWire(v))
	}
	writeJSON(w, wire)
}

func (g *GitHub) readBody(w http.ResponseWriter, r *http.Request) (string, bool) {
	if g.ReadOnly {
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
		return "", false
	}
	var in struct {
		Body *string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Body == nil {
		writeError(w, http.StatusUnprocessableEntity, "Invalid request: body is missing")
		return "", false
	}
	return *in.Body, true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"message":%q,"documentation_url":"https://docs.github.com/rest"}`+"\n", msg)
}
