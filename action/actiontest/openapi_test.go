package actiontest

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-github/v66/github"
)

// serveDescribed starts handler behind the description's check and returns
// the server and what the check reported.
func serveDescribed(t *testing.T, handler http.HandlerFunc) (*httptest.Server, func() []string) {
	t.Helper()
	doc, router, err := loadDescription()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var problems []string
	srv := httptest.NewServer(described(doc, router, func(p string) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, p)
	}, handler))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

func do(t *testing.T, method, url, body string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestDescriptionRefusesWhatGitHubDoesNotHave: each kind of mismatch the
// check exists for is reported, naming the request.
func TestDescriptionRefusesWhatGitHubDoesNotHave(t *testing.T) {
	t.Parallel()
	// A faithful comment from the fake itself, to alter one thing at a time.
	g := NewGitHub(t, "acme/train", "tok")
	good := g.commentJSON(g.add(3, "hello", "github-actions[bot]"))
	cases := []struct {
		name, method, path, body string
		handler                  func(w http.ResponseWriter)
		want                     string
	}{
		{"route", "GET", "/api/v3/repos/acme/train/issues/3/commentz", "", func(w http.ResponseWriter) { writeJSON(w, []any{}) },
			"has no such operation"},
		{"method", "PUT", "/api/v3/repos/acme/train/issues/3/comments", `{"body":"x"}`, func(w http.ResponseWriter) { writeJSON(w, good) },
			"has no such operation"},
		{"response field", "GET", "/api/v3/repos/acme/train/issues/3/comments", "", func(w http.ResponseWriter) {
			c := clone(good)
			c["reviewer_score"] = 3
			writeJSON(w, []any{c})
		}, `"reviewer_score" is unsupported`},
		{"missing field", "GET", "/api/v3/repos/acme/train/issues/3/comments", "", func(w http.ResponseWriter) {
			c := clone(good)
			delete(c, "issue_url")
			writeJSON(w, []any{c})
		}, `"issue_url" is missing`},
		{"field type", "GET", "/api/v3/repos/acme/train/issues/3/comments", "", func(w http.ResponseWriter) {
			c := clone(good)
			c["id"] = "1001"
			writeJSON(w, []any{c})
		}, `"/0/id"`},
		{"status", "POST", "/api/v3/repos/acme/train/issues/3/comments", `{"body":"x"}`, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK) // GitHub answers 201 Created
			writeJSON(w, good)
		}, "status is not supported"},
		{"request field", "POST", "/api/v3/repos/acme/train/issues/3/comments", `{"body":"x","sticky":true}`, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			writeJSON(w, good)
		}, `request does not match issues/create-comment`},
		{"query", "GET", "/api/v3/repos/acme/train/issues/3/comments?per_page=many", "", func(w http.ResponseWriter) { writeJSON(w, []any{}) },
			`parameter "per_page"`},
		{"error body", "GET", "/api/v3/repos/acme/train/issues/3/comments", "", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"bad token"}`))
		}, "not GitHub's basic-error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, problems := serveDescribed(t, func(w http.ResponseWriter, r *http.Request) { c.handler(w) })
			do(t, c.method, srv.URL+c.path, c.body)
			got := problems()
			if len(got) == 0 {
				t.Fatalf("%s %s passed the description's check, want a report containing %q", c.method, c.path, c.want)
			}
			if !strings.Contains(strings.Join(got, "\n"), c.want) {
				t.Errorf("%s %s: reports %q, want one containing %q", c.method, c.path, got, c.want)
			}
		})
	}
}

// TestFakeConformsThroughGoGitHub drives every route of the fake with
// go-github (the Action's client), paging included, and through raw
// requests for the answers go-github hides: nothing may be reported.
func TestFakeConformsThroughGoGitHub(t *testing.T) {
	t.Parallel()
	doc, router, err := loadDescription()
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	var mu sync.Mutex
	g := &GitHub{Repo: "acme/train", Token: "tok", PerPage: 2, nextID: 1000, comments: map[int][]*Comment{}}
	g.Server = httptest.NewServer(described(doc, router, func(p string) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, p)
	}, http.HandlerFunc(g.serve)))
	defer g.Close()
	g.Seed(4, 5)

	ctx := context.Background()
	gh, err := github.NewClient(nil).WithAuthToken("tok").WithEnterpriseURLs(g.APIURL(), g.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	n := 0
	for {
		cs, resp, err := gh.Issues.ListComments(ctx, "acme", "train", 4, opts)
		if err != nil {
			t.Fatal(err)
		}
		n += len(cs)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if n != 5 {
		t.Fatalf("listed %d comments over the pages, want 5", n)
	}
	c, _, err := gh.Issues.CreateComment(ctx, "acme", "train", 4, &github.IssueComment{Body: github.String("first")})
	if err != nil {
		t.Fatal(err)
	}
	if c.GetUser().GetType() != "Bot" || c.GetIssueURL() == "" {
		t.Errorf("created comment: user type %q, issue_url %q", c.GetUser().GetType(), c.GetIssueURL())
	}
	if _, _, err := gh.Issues.EditComment(ctx, "acme", "train", c.GetID(), &github.IssueComment{Body: github.String("second")}); err != nil {
		t.Fatal(err)
	}
	run, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "train", github.CreateCheckRunOptions{
		Name: "udgam-ci: acme/tiny", HeadSHA: strings.Repeat("a", 40), Status: github.String("in_progress"),
		Output: &github.CheckRunOutput{Title: github.String("t"), Summary: github.String("s"), Annotations: []*github.CheckRunAnnotation{{
			Path: github.String("README.md"), StartLine: github.Int(1), EndLine: github.Int(1), AnnotationLevel: github.String("warning"), Message: github.String("m"),
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if run.GetOutput().GetAnnotationsCount() != 1 || run.GetApp().GetSlug() != "github-actions" {
		t.Errorf("created check run: %d annotations counted, app %q", run.GetOutput().GetAnnotationsCount(), run.GetApp().GetSlug())
	}
	if _, _, err := gh.Checks.UpdateCheckRun(ctx, "acme", "train", run.GetID(), github.UpdateCheckRunOptions{
		Name: "udgam-ci: acme/tiny", Conclusion: github.String("failure"), Status: github.String("completed"),
		Output: &github.CheckRunOutput{Title: github.String("t2"), Summary: github.String("s2")},
	}); err != nil {
		t.Fatal(err)
	}
	list, _, err := gh.Checks.ListCheckRunsForRef(ctx, "acme", "train", strings.Repeat("a", 40), &github.ListCheckRunsOptions{CheckName: github.String("udgam-ci: acme/tiny")})
	if err != nil {
		t.Fatal(err)
	}
	if list.GetTotal() != 1 || list.CheckRuns[0].GetConclusion() != "failure" || list.CheckRuns[0].CompletedAt == nil {
		t.Errorf("listed check runs: %d, conclusion %q, completed_at %v", list.GetTotal(), list.CheckRuns[0].GetConclusion(), list.CheckRuns[0].CompletedAt)
	}
	// The errors GitHub gives: bad credentials, an unknown comment, and
	// below a fork's read-only token.
	for _, req := range []struct{ token, method, path, body string }{
		{"wrong", "GET", "/repos/acme/train/issues/4/comments", ""},
		{"tok", "PATCH", "/repos/acme/train/issues/comments/99999", `{"body":"x"}`},
	} {
		r, _ := http.NewRequest(req.method, g.APIURL()+req.path, bytes.NewBufferString(req.body))
		r.Header.Set("Authorization", "Bearer "+req.token)
		r.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("%s %s answered %s, want an error", req.method, req.path, resp.Status)
		}
	}
	g.ReadOnly = true
	if _, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "train", github.CreateCheckRunOptions{Name: "n", HeadSHA: strings.Repeat("b", 40)}); err == nil {
		t.Error("a read-only token created a check run")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// BenchmarkDescription measures what holding the fake to the description
// costs: loading it (once per test binary) and checking one exchange.
func BenchmarkDescription(b *testing.B) {
	file, err := installDescription()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := readDescription(file); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check-list-comments", func(b *testing.B) {
		doc, router, err := loadDescription()
		if err != nil {
			b.Fatal(err)
		}
		g := &GitHub{Repo: "acme/train", Token: "tok", PerPage: 100, nextID: 1000, comments: map[int][]*Comment{}}
		g.Server = httptest.NewServer(http.HandlerFunc(g.serve))
		defer g.Close()
		g.Seed(4, 30)
		r := httptest.NewRequest("GET", "/api/v3/repos/acme/train/issues/4/comments?per_page=100", nil)
		r.Header.Set("Authorization", "Bearer tok")
		rec := httptest.NewRecorder()
		g.serve(rec, r)
		for b.Loop() {
			if p := checkExchange(doc, router, r, nil, rec.Code, rec.Header(), rec.Body.Bytes()); len(p) > 0 {
				b.Fatal(p)
			}
		}
	})
}
