package runfile_test

import (
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
)

func TestIDRules(t *testing.T) {
	t.Parallel()
	sha := strings.Repeat("0123456789", 4)
	for _, tc := range []struct {
		s                    string
		commit, hub, gitRepo bool
	}{
		{s: sha, commit: true},
		{s: strings.ToUpper("abcdef" + sha[6:]), commit: false}, // upper case is not how git prints it
		{s: sha[:39]},
		{s: sha + "0"},
		{s: "main"},
		{s: "acme/train", hub: true, gitRepo: true},
		{s: "HuggingFaceTB/SmolLM2-135M", hub: true, gitRepo: true},
		{s: "acme/.github", gitRepo: true}, // GitHub's, not the hub's
		{s: "acme/-x", gitRepo: true},
		{s: "acme/a..b"},
		{s: "acme"},
		{s: "acme/train/extra"},
		{s: "/train"},
		{s: "acme/"},
		{s: ".acme/train"},
		{s: "acme/tr ain"},
		{s: strings.Repeat("a", 101) + "/x", hub: true}, // over GitHub's bound
		{s: "x/" + strings.Repeat("a", 101), hub: true},
	} {
		if got := runfile.IsCommit(tc.s); got != tc.commit {
			t.Errorf("runfile.IsCommit(%q) = %v, want %v", tc.s, got, tc.commit)
		}
		if got := runfile.IsHubRepo(tc.s); got != tc.hub {
			t.Errorf("IsHubRepo(%q) = %v, want %v", tc.s, got, tc.hub)
		}
		if got := runfile.IsGitRepo(tc.s); got != tc.gitRepo {
			t.Errorf("IsGitRepo(%q) = %v, want %v", tc.s, got, tc.gitRepo)
		}
	}
}
