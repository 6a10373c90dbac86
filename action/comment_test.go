package action

import (
	"context"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/action/actiontest"
	"github.com/udgamlabs/udgam-ci/compare"
)

func TestUpsertCommentFindsItsCommentOnAnyPage(t *testing.T) {
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

func TestFitComment(t *testing.T) {
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

// The verdict line outside a job follows fail-on as the job's does.
func TestVerdictOutsideAJob(t *testing.T) {
	reg := &compare.Comparison{Test: "probes", Result: compare.Result{Metric: compare.MetricAccuracy, Verdict: compare.Regressed}}
	ok := &compare.Comparison{Test: "fresh", Result: compare.Result{Metric: compare.MetricBPB, Verdict: compare.Improved}}
	for _, tc := range []struct {
		failOn string
		cs     []*compare.Comparison
		want   string
	}{
		{FailOnRegression, []*compare.Comparison{ok}, "This job passes (fail-on: regression)."},
		{FailOnRegression, []*compare.Comparison{ok, reg}, "This job fails because of: probes regressed (fail-on: regression)."},
		{FailOnNever, []*compare.Comparison{reg}, "This job passes (fail-on: never), with warnings: probes regressed."},
	} {
		if got := Verdict(tc.failOn, "m", tc.cs); !strings.HasPrefix(got, tc.want) {
			t.Errorf("fail-on %s: %q, want %q", tc.failOn, got, tc.want)
		}
	}
}
