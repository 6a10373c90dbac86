package main

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/action/actiontest"
	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// TestOneComparisonOnEverySurface scores two tiny models for real through
// `udgam-ci action` (the second run's PR comment and job summary), then
// shows the same pair with `compare` (text, --json, --markdown) and on a
// report server's compare page, every one with its defaults: each surface
// prints the same base, head, delta, interval and p-value (issue 14).
func TestOneComparisonOnEverySurface(t *testing.T) {
	t.Parallel()
	needEngine(t)
	dir := t.TempDir()
	var docs strings.Builder
	for i := range 16 {
		fmt.Fprintf(&docs, "{\"id\":\"d%02d\",\"source\":\"s%d\",\"text\":\"Document %d: %s the lazy dog %d times.\"}\n",
			i, i%2, i, strings.Repeat("the quick brown fox jumps over ", 1+i%5), i*7)
	}
	data := filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(data, []byte(docs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	gh := actiontest.NewGitHub(t, "acme/train", "ghs_x")
	action := func(seed uint64, event, payload, baseline string) string {
		t.Helper()
		ckpt := filepath.Join(dir, fmt.Sprintf("ckpt%d", seed))
		m := converttest.Small
		m.Seed = seed
		if _, err := m.Write(ckpt); err != nil {
			t.Fatal(err)
		}
		ev := filepath.Join(t.TempDir(), "event.json")
		if err := os.WriteFile(ev, []byte(payload), 0o644); err != nil {
			t.Fatal(err)
		}
		work := filepath.Join(t.TempDir(), "runs")
		vars := map[string]string{
			"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": ev, "GITHUB_REPOSITORY": "acme/train", "GITHUB_API_URL": gh.APIURL(),
			"GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary.md"),
			"INPUT_MODEL":         ckpt, "INPUT_MODEL-NAME": "acme/tiny", "INPUT_TESTS": "fresh", "INPUT_FRESH-DATA": data,
			"INPUT_THREADS": "2", "INPUT_WINDOW": "64", "INPUT_STRIDE": "32", "INPUT_CACHE-DIR": filepath.Join(dir, "cache"),
			"INPUT_WORK-DIR": work, "INPUT_BASELINE": baseline, "INPUT_GITHUB-TOKEN": "ghs_x", "INPUT_FAIL-ON": "never",
			// every record: the surfaces show the bootstrap interval, whose
			// seed the test tells apart (a whole sequential run is exact)
			"INPUT_UNTIL": "all",
		}
		e, stdout, stderr := actionTestEnv(vars)
		if code := run(e, []string{"action"}); code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", event, code, stdout, stderr)
		}
		return filepath.Join(work, "fresh-head.jsonl")
	}
	base := action(1, "push", `{"ref":"refs/heads/main","repository":{"full_name":"acme/train","default_branch":"main"}}`, "none")
	os.Remove(filepath.Join(dir, "summary.md"))
	head := action(2, "pull_request", `{"pull_request":{"number":4,"head":{"ref":"feat","sha":"`+strings.Repeat("c", 40)+`"},"base":{"ref":"main"}},"repository":{"full_name":"acme/train"}}`, base)

	surfaces := map[string]string{}
	cli := func(args ...string) string {
		t.Helper()
		e, out, errb := actionTestEnv(nil)
		if code := run(e, append([]string{"compare", base, head, "--fail-on", "never"}, args...)); code != 0 {
			t.Fatalf("compare %v: exit %d: %s", args, code, errb)
		}
		return out.String()
	}
	surfaces["text"] = cli()
	surfaces["markdown"] = cli("--markdown")
	var c compare.Comparison
	if err := json.Unmarshal([]byte(cli("--json")), &c); err != nil {
		t.Fatal(err)
	}
	if c.Seed != compare.DefaultSeed || c.Resamples != compare.DefaultResamples {
		t.Errorf("compare --json: seed %d, %d resamples; want the defaults %d, %d", c.Seed, c.Resamples, compare.DefaultSeed, compare.DefaultResamples)
	}
	if c.CI[0] == c.CI[1] {
		t.Fatalf("the two models score alike (interval %v): the test cannot tell seeds apart", c.CI)
	}
	for _, cm := range gh.Comments(4) {
		surfaces["comment"] = cm.Body
	}
	sum, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	surfaces["summary"] = string(sum)

	// The report server, with its defaults, on 127.0.0.1.
	live := servertest.Start(t, server.Config{}, "acme/train")
	for _, p := range []string{base, head} {
		e, _, errb := actionTestEnv(nil)
		if code := run(e, []string{"push", p, "--server", live.URL, "--token", live.Tokens[0]}); code != 0 {
			t.Fatalf("push %s: exit %d: %s", p, code, errb)
		}
	}
	resp, err := http.Get(live.URL + "/compare?base=" + c.BaseRun.ID + "&head=" + c.HeadRun.ID)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("compare page: %s\n%s", resp.Status, page)
	}
	surfaces["page"] = html.UnescapeString(string(page))

	want := map[string]string{
		"base": report.FormatScore(c.Metric, c.Base), "head": report.FormatScore(c.Metric, c.Head),
		"delta": report.FormatDelta(c.Metric, c.Delta), "interval": report.FormatCI(c.Metric, c.CI), "p": report.FormatP(c.PValue),
	}
	for _, name := range []string{"text", "markdown", "comment", "summary", "page"} {
		got := surfaces[name]
		if got == "" {
			t.Errorf("%s: nothing rendered", name)
			continue
		}
		for what, s := range want {
			if !strings.Contains(got, s) {
				t.Errorf("%s does not show the %s %q:\n%s", name, what, s, got)
			}
		}
	}
}
