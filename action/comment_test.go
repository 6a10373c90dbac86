package action

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/action/actiontest"
)

func TestUpsertCommentFindsItsCommentOnAnyPage(t *testing.T) {
	t.Parallel()
	gh := actiontest.NewGitHub(t, "acme/train", "tok")
	gh.PerPage = 2
	gh.Seed(7, 5)
	client, err := NewGitHubClient(gh.APIURL(), "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	marker := "<!-- udgam-ci: model=acme/tiny -->"

	first, err := UpsertComment(ctx, client, "acme/train", 7, marker, marker+"\nrun 1")
	if err != nil {
		t.Fatal(err)
	}
	gh.Seed(7, 4) // the thread grows: our comment is now on page 3 of 5
	second, err := UpsertComment(ctx, client, "acme/train", 7, marker, marker+"\nrun 2")
	if err != nil {
		t.Fatal(err)
	}
	if !first.Created || second.Created || first.ID != second.ID {
		t.Errorf("first %+v, second %+v: want one comment created then edited", first, second)
	}
	var ours []actiontest.Comment
	for _, c := range gh.Comments(7) {
		if strings.Contains(c.Body, marker) {
			ours = append(ours, c)
		}
	}
	if len(ours) != 1 || !strings.HasSuffix(ours[0].Body, "run 2") {
		t.Fatalf("comments with the marker: %+v", ours)
	}
	// Another model gets its own comment.
	other, err := UpsertComment(ctx, client, "acme/train", 7, "<!-- udgam-ci: model=acme/big -->", "big")
	if err != nil {
		t.Fatal(err)
	}
	if !other.Created || other.ID == first.ID {
		t.Errorf("other model's comment %+v", other)
	}
	if got := gh.Comments(7)[len(gh.Comments(7))-1].Body; !strings.HasPrefix(got, "<!-- udgam-ci: model=acme/big -->\n") {
		t.Errorf("a body without the marker gets it prepended; got %q", got)
	}
	var pages int
	for _, l := range gh.Log() {
		if strings.HasPrefix(l, "GET /api/v3/repos/acme/train/issues/7/comments") {
			pages++
		}
	}
	if pages < 5 {
		t.Errorf("%d list requests; the second upsert must page through", pages)
	}
}

func TestUpsertCommentErrors(t *testing.T) {
	t.Parallel()
	gh := actiontest.NewGitHub(t, "acme/train", "tok")
	ctx := context.Background()
	bad, _ := NewGitHubClient(gh.APIURL(), "wrong", nil)
	if _, err := UpsertComment(ctx, bad, "acme/train", 1, "m", "b"); err == nil || !strings.Contains(err.Error(), "401 Bad credentials") {
		t.Errorf("bad token: %v", err)
	}
	gh.ReadOnly = true
	ro, _ := NewGitHubClient(gh.APIURL(), "tok", nil)
	if _, err := UpsertComment(ctx, ro, "acme/train", 1, "m", "b"); err == nil || !strings.Contains(err.Error(), "403 Resource not accessible") {
		t.Errorf("read-only token: %v", err)
	}
	if _, err := UpsertComment(ctx, ro, "acme", 1, "m", "b"); err == nil || !strings.Contains(err.Error(), "OWNER/NAME") {
		t.Errorf("bad repo: %v", err)
	}
}

// TestRepositoryRule: the comment and the check run take the repository
// through runfile.IsGitRepo, so an id GitHub would not accept is refused
// before any request, and one GitHub allows (".github") is split for the API.
func TestRepositoryRule(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("request %s %s for a repository that should have been refused", r.Method, r.URL.Path)
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer srv.Close()
	gh, err := NewGitHubClient(srv.URL, "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, repo := range []string{"", "acme", "acme/", "/train", "acme/train/x", "-acme/train", "acme/tr ain", "acme/..", "acme/a..b"} {
		if _, err := UpsertComment(ctx, gh, repo, 1, "m", "b"); err == nil || !strings.Contains(err.Error(), "OWNER/NAME") {
			t.Errorf("comment on %q: %v, want an OWNER/NAME error", repo, err)
		}
		if _, err := UpsertCheck(ctx, gh, repo, Check{Name: "udgam-ci", HeadSHA: strings.Repeat("a", 40)}); err == nil || !strings.Contains(err.Error(), "OWNER/NAME") {
			t.Errorf("check run on %q: %v, want an OWNER/NAME error", repo, err)
		}
	}
	for _, tc := range []struct{ repo, owner, name string }{
		{"acme/train", "acme", "train"},
		{"acme/.github", "acme", ".github"},
		{"my-org/model_2.x", "my-org", "model_2.x"},
	} {
		if o, n, ok := splitRepo(tc.repo); !ok || o != tc.owner || n != tc.name {
			t.Errorf("splitRepo(%q) = %q, %q, %v; want %q, %q", tc.repo, o, n, ok, tc.owner, tc.name)
		}
	}
}

func TestFitComment(t *testing.T) {
	t.Parallel()
	short := "<!-- m -->\nshort"
	if got := fitComment(short); got != short {
		t.Errorf("a short body changed: %q", got)
	}
	long := "<!-- m -->\n" + strings.Repeat("| row | ✅ |\n", 10000)
	got := fitComment(long)
	if n := len([]rune(got)); n > maxComment || n < maxComment-200 {
		t.Errorf("cut body has %d characters", n)
	}
	if !strings.HasPrefix(got, "<!-- m -->\n| row") || !strings.HasSuffix(got, "the whole report.\n") || !strings.Contains(got, "| row | ✅ |\n\n…") {
		t.Errorf("cut body ends %q", got[len(got)-120:])
	}
}
