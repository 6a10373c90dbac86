package ghenv_test

import (
	"encoding/json"
	"testing"

	"github.com/udgamlabs/udgam-ci/internal/ghenv"
)

func TestFill(t *testing.T) {
	t.Parallel()
	pr := func(n int) *int { return &n }
	tests := []struct {
		name  string
		flags ghenv.Commit
		env   map[string]string
		want  ghenv.Commit
	}{
		{"nothing", ghenv.Commit{}, nil, ghenv.Commit{}},
		{
			"pull request",
			ghenv.Commit{},
			map[string]string{"GITHUB_REPOSITORY": "o/r", "GITHUB_SHA": "abc", "GITHUB_HEAD_REF": "feature", "GITHUB_REF_NAME": "7/merge", "GITHUB_REF": "refs/pull/7/merge"},
			ghenv.Commit{Repo: "o/r", SHA: "abc", Ref: "feature", PR: pr(7)},
		},
		{
			"push to main",
			ghenv.Commit{},
			map[string]string{"GITHUB_REPOSITORY": "o/r", "GITHUB_SHA": "def", "GITHUB_REF_NAME": "main", "GITHUB_REF": "refs/heads/main"},
			ghenv.Commit{Repo: "o/r", SHA: "def", Ref: "main"},
		},
		{
			"flags win",
			ghenv.Commit{Repo: "x/y", SHA: "123", Ref: "dev", PR: pr(9)},
			map[string]string{"GITHUB_REPOSITORY": "o/r", "GITHUB_SHA": "abc", "GITHUB_HEAD_REF": "feature", "GITHUB_REF": "refs/pull/7/merge"},
			ghenv.Commit{Repo: "x/y", SHA: "123", Ref: "dev", PR: pr(9)},
		},
		{
			"not a pull ref",
			ghenv.Commit{},
			map[string]string{"GITHUB_REF": "refs/pull/abc/merge"},
			ghenv.Commit{},
		},
		{
			"pull number 0",
			ghenv.Commit{},
			map[string]string{"GITHUB_REF": "refs/pull/0/merge"},
			ghenv.Commit{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := json.Marshal(ghenv.Fill(tt.flags, func(k string) string { return tt.env[k] }))
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Errorf("Fill = %s, want %s", got, want)
			}
		})
	}
	if g := ghenv.Fill(ghenv.Commit{Repo: "a/b"}, nil); g.Repo != "a/b" || g.SHA != "" {
		t.Errorf("Fill with no environment = %+v", g)
	}
}
