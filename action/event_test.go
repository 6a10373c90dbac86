package action

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		kind    string
		payload string
		env     map[string]string
		want    Event
		push    bool
	}{
		{
			name: "pull_request",
			kind: "pull_request",
			payload: `{"number":7,"pull_request":{"number":7,"head":{"ref":"feat/lr","sha":"` + strings.Repeat("b", 40) + `"},"base":{"ref":"main"}},
				"repository":{"full_name":"acme/train","default_branch":"main"}}`,
			want: Event{Kind: "pull_request", Repo: "acme/train", SHA: strings.Repeat("b", 40), Ref: "feat/lr", BaseRef: "main", PR: 7, Default: "main"},
		},
		{
			name: "pull_request_target records the PR head, not the base commit",
			kind: "pull_request_target",
			env:  map[string]string{"GITHUB_SHA": strings.Repeat("a", 40)},
			payload: `{"pull_request":{"number":9,"head":{"ref":"fork-branch","sha":"` + strings.Repeat("c", 40) + `"},"base":{"ref":"dev","sha":"` + strings.Repeat("3", 40) + `"}},
				"repository":{"full_name":"acme/train","default_branch":"main"}}`,
			want: Event{Kind: "pull_request_target", Repo: "acme/train", SHA: strings.Repeat("c", 40), Ref: "fork-branch", BaseRef: "dev", BaseSHA: strings.Repeat("3", 40), PR: 9, Default: "main"},
		},
		{
			name:    "push to the default branch",
			kind:    "push",
			payload: `{"ref":"refs/heads/main","after":"` + strings.Repeat("d", 40) + `","repository":{"full_name":"acme/train","default_branch":"main"}}`,
			want:    Event{Kind: "push", Repo: "acme/train", SHA: strings.Repeat("d", 40), Ref: "main", Default: "main"},
			push:    true,
		},
		{
			name:    "push to another branch",
			kind:    "push",
			payload: `{"ref":"refs/heads/exp","after":"` + strings.Repeat("d", 40) + `","repository":{"full_name":"acme/train","default_branch":"main"}}`,
			want:    Event{Kind: "push", Repo: "acme/train", SHA: strings.Repeat("d", 40), Ref: "exp", Default: "main"},
		},
		{
			name: "workflow_run of a PR",
			kind: "workflow_run",
			payload: `{"workflow_run":{"event":"pull_request","head_branch":"feat","head_sha":"` + strings.Repeat("e", 40) + `",
				"pull_requests":[{"number":12,"head":{"ref":"feat"},"base":{"ref":"main","sha":"` + strings.Repeat("4", 40) + `"}}]},"repository":{"full_name":"acme/train","default_branch":"main"}}`,
			want: Event{Kind: "workflow_run", Repo: "acme/train", SHA: strings.Repeat("e", 40), Ref: "feat", BaseRef: "main", BaseSHA: strings.Repeat("4", 40), PR: 12, Default: "main"},
		},
		{
			name:    "workflow_run of a push",
			kind:    "workflow_run",
			payload: `{"workflow_run":{"event":"push","head_branch":"main","head_sha":"` + strings.Repeat("f", 40) + `","pull_requests":[]},"repository":{"full_name":"acme/train","default_branch":"main"}}`,
			want:    Event{Kind: "push", Repo: "acme/train", SHA: strings.Repeat("f", 40), Ref: "main", Default: "main"},
			push:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "event.json")
			if err := os.WriteFile(path, []byte(tt.payload), 0o644); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"GITHUB_EVENT_NAME": tt.kind, "GITHUB_EVENT_PATH": path,
				"GITHUB_API_URL": "https://ghe.example/api/v3/", "GITHUB_RUN_ID": "42"}
			for k, v := range tt.env {
				env[k] = v
			}
			got, err := ReadEvent(func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			tt.want.APIURL = "https://ghe.example/api/v3"
			tt.want.ServerURL = "https://github.com"
			tt.want.RunURL = "https://github.com/acme/train/actions/runs/42"
			if got != tt.want {
				t.Errorf("event\n got %+v\nwant %+v", got, tt.want)
			}
			if got.IsBaselinePush() != tt.push {
				t.Errorf("baseline push %v, want %v", got.IsBaselinePush(), tt.push)
			}
		})
	}
}

func TestReadEventBadPayload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "event.json")
	os.WriteFile(path, []byte("{not json"), 0o644)
	_, err := ReadEvent(func(k string) string {
		if k == "GITHUB_EVENT_PATH" {
			return path
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v does not name %s", err, path)
	}
}
