package acttest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/action"
	"github.com/udgamlabs/udgam-ci/action/actiontest"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/hub/hubtest"
	"github.com/udgamlabs/udgam-ci/server/client"
)

const (
	repo      = "acme/train"
	model     = "acme/bigram"
	dataset   = "datasets/acme/evalsets"
	ghToken   = "ghs_act_token"
	workflow  = "action/acttest/testdata/udgam-ci.yml"
	modelFile = "bigram-f32.gguf" // the name says the dtype, as fetch looks for
	// The commits: the hub's (one per model) and the training repository's.
	weakRev = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	midRev  = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	goodRev = "cccccccccccccccccccccccccccccccccccccccc"
	dataRev = "dddddddddddddddddddddddddddddddddddddddd"
	mainSHA = "1000000000000000000000000000000000000001"
	headSHA = "2000000000000000000000000000000000000002"
	weakSHA = "3000000000000000000000000000000000000003"
	forkSHA = "4000000000000000000000000000000000000004"
	// actTimeout bounds one act run: a build with warm caches and two
	// small tests take well under a minute.
	actTimeout = 8 * time.Minute
)

// e2e is the world the act runs share: the hub, the report server, the
// fake GitHub, act's cache server's folder.
type e2e struct {
	t           *testing.T
	root        string // the checkout, act's workspace
	act         string // the act binary
	cacheAction string // the actions/cache stand-in
	cacheServer string // act's cache server's storage: the runs share it
	// runnerCache is the pull requests' cache-dir. @actions/cache keys an
	// entry by its paths too, and act's host mode gives each run another
	// runner.temp (GitHub's runners keep one path), so these runs name a
	// fixed folder, emptied before each run as on a fresh runner.
	runnerCache string
	hub         *hubtest.Hub
	serverURL   string
	serverToken string
}

// job is one act run: an event and what the repository's settings give
// the workflow.
type job struct {
	event   string // pull_request or push
	payload map[string]any
	vars    map[string]string
	secrets map[string]string
	gh      *actiontest.GitHub
	fails   bool // the job should fail: its log is shown only if it does not
}

// result is what one act run left.
type result struct {
	err     error // act's exit: the job's failure
	log     string
	outputs map[string]string // the Action's outputs, as action.yml maps them
	summary string            // the job summary
}

// TestActionUnderAct runs action.yml under act: the baseline push, a pull
// request twice (the second run restores every cache the first saved), a
// regression, a fork's pull request without secrets, until: decided.
func TestActionUnderAct(t *testing.T) {
	t.Parallel()
	act := os.Getenv("UDGAM_ACT")
	if act == "" {
		t.Skip("make action-e2e runs this: it installs act (UDGAM_ACT) and the actions/cache stand-in (UDGAM_ACT_CACHE_ACTION)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	e := &e2e{t: t, root: root, act: act, cacheAction: os.Getenv("UDGAM_ACT_CACHE_ACTION"), cacheServer: t.TempDir(), runnerCache: filepath.Join(t.TempDir(), "udgam-ci-cache")}
	if e.cacheAction == "" {
		t.Fatal("UDGAM_ACT is set but UDGAM_ACT_CACHE_ACTION is not (make action-e2e sets both)")
	}
	e.startHub()
	e.startServer()
	gh := actiontest.NewGitHub(t, repo, ghToken)
	secrets := map[string]string{"GITHUB_TOKEN": ghToken, "UDGAM_SERVER_TOKEN": e.serverToken}

	// main's baseline: every record scored and uploaded; nothing to compare.
	push := e.run("push", job{event: "push", gh: gh, secrets: secrets,
		payload: map[string]any{"ref": "refs/heads/main", "after": mainSHA, "repository": repoJSON(repo)},
		vars:    map[string]string{"MODEL_REVISION": midRev, "UNTIL": "all"}})
	if push.err != nil {
		t.Fatalf("the push job failed: %v", push.err)
	}
	for _, test := range []string{"fresh", "probes"} {
		run, err := (&client.Client{BaseURL: e.serverURL}).Baseline(context.Background(), repo, model, "main", test)
		if err != nil {
			t.Fatalf("the push left no %s baseline on the report server: %v", test, err)
		}
		if run.Header.Model.Revision != midRev {
			t.Errorf("%s baseline is revision %s, want %s", test, run.Header.Model.Revision, midRev)
		}
	}
	wantOutputs(t, push, map[string]string{"verdict": "none"}, "run-files", "run-url", "run-urls", "fresh-score", "probes-score", "fresh-run-file", "probes-run-file")
	if !strings.HasPrefix(push.outputs["run-url"], e.serverURL+"/") {
		t.Errorf("run-url %q is not a page of the report server %s", push.outputs["run-url"], e.serverURL)
	}
	wantSummary(t, push, "## udgam-ci: `acme/bigram`", "| fresh | bpb |", "| probes | accuracy |", e.serverURL+"/runs/")
	if n := len(gh.Comments(0)) + len(gh.Checks()); n != 0 {
		t.Errorf("a push wrote %d comments or Check runs", n)
	}

	// A pull request with the better model: the comment, the Check run,
	// the outputs; every cache is saved by the post steps.
	prJob := job{event: "pull_request", gh: gh, secrets: secrets,
		payload: prPayload(1, "more-text", headSHA, repo),
		vars:    map[string]string{"MODEL_REVISION": goodRev, "UNTIL": "all", "CACHE_DIR": e.runnerCache}}
	pr := e.run("pr", prJob)
	if pr.err != nil {
		t.Fatalf("the pull request job failed: %v", pr.err)
	}
	// Both tests compared and uploaded, a comment: every output has a
	// value, but those of an anchor, which this workflow does not name.
	var set []string
	for _, n := range action.OutputNames() {
		if !strings.Contains(n, "anchor") {
			set = append(set, n)
		}
	}
	wantOutputs(t, pr, map[string]string{"verdict": "improved", "fresh-verdict": "improved", "settings-mismatch": "false"}, set...)
	comments := gh.Comments(1)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "<!-- udgam-ci: model="+model+" -->") {
		t.Fatalf("PR 1 has %d comments, want the one udgam-ci comment: %+v", len(comments), comments)
	}
	if pr.outputs["comment-url"] != comments[0].HTMLURL {
		t.Errorf("comment-url %q, the comment is %q", pr.outputs["comment-url"], comments[0].HTMLURL)
	}
	wantCheck(t, gh, headSHA, "success")
	wantSummary(t, pr, "Fresh Text", "Probe Suite", "improved")
	if strings.Contains(pr.summary, "<!-- udgam-ci") {
		t.Errorf("the job summary carries the comment's marker:\n%s", pr.summary)
	}
	for _, key := range []string{"udgam-ci-model-" + model + "-" + goodRev, "udgam-ci-data-hf://" + dataset} {
		if !strings.Contains(pr.log, "Cache saved with key: "+key) {
			t.Errorf("no cache saved with key %s...", key)
		}
	}

	// The same pull request again, until: decided, on a fresh runner: the
	// model and the data come from the caches, not the hub, and the one
	// comment is edited in place.
	downloads := e.hubDownloads()
	prJob.vars["UNTIL"] = "decided"
	again := e.run("pr-again-decided", prJob)
	if again.err != nil {
		t.Fatalf("the second pull request job failed: %v", again.err)
	}
	for _, key := range []string{"udgam-ci-model-" + model + "-" + goodRev, "udgam-ci-data-hf://" + dataset} {
		if !strings.Contains(again.log, "Cache restored from key: "+key) {
			t.Errorf("the second run restored no cache with key %s...", key)
		}
	}
	if got := e.hubDownloads(); got != downloads {
		t.Errorf("the second run downloaded %d files from the hub; the caches should have held them", got-downloads)
	}
	// until: decided scored under its stopping rule (on sets this small it
	// may run to the end), and the intervals say anytime-valid; until: all
	// gave fixed-sample ones.
	if comments := gh.Comments(1); len(comments) != 1 || !strings.Contains(comments[0].Body, "anytime-valid") {
		t.Errorf("want the one comment, edited to give until: decided's anytime-valid intervals: %d comments\n%+v", len(comments), comments)
	}
	wantSummary(t, again, "anytime-valid")
	if !strings.Contains(again.log, "stopped (") {
		t.Error("until: decided: the scorer logged no stopping rule")
	}
	if strings.Contains(pr.summary, "anytime-valid") || strings.Contains(pr.log, "stopped (") {
		t.Error("until: all scored under a stopping rule")
	}
	if checks := gh.Checks(); len(checks) != 1 || checks[0].Updates == 0 {
		t.Errorf("want the one Check run updated by the second job: %+v", checks)
	}

	// A pull request that regresses fails the job, and says so in the
	// outputs and the Check run.
	weak := e.run("pr-regressed", job{event: "pull_request", gh: gh, secrets: secrets, fails: true,
		payload: prPayload(2, "less-text", weakSHA, repo),
		vars:    map[string]string{"MODEL_REVISION": weakRev, "UNTIL": "all", "CACHE_DIR": e.runnerCache}})
	if weak.err == nil {
		t.Error("the job of a regressing pull request passed")
	}
	wantOutputs(t, weak, map[string]string{"verdict": "regressed", "fresh-verdict": "regressed"}, "comment-url")
	wantCheck(t, gh, weakSHA, "failure")
	wantSummary(t, weak, "regressed")

	// A fork's pull request: no secrets, a read-only token. The scores and
	// the verdict stand; the comment and the Check run are warnings.
	ro := actiontest.NewGitHub(t, repo, ghToken)
	ro.ReadOnly = true
	fork := e.run("fork", job{event: "pull_request", gh: ro, secrets: map[string]string{"GITHUB_TOKEN": ghToken},
		payload: prPayload(3, "contributor-branch", forkSHA, "someone/train"),
		vars:    map[string]string{"MODEL_REVISION": goodRev, "UNTIL": "all", "CACHE_DIR": e.runnerCache}})
	if fork.err != nil {
		t.Fatalf("the fork's job failed: %v", fork.err)
	}
	wantOutputs(t, fork, map[string]string{"verdict": "improved", "comment-url": ""}, "fresh-delta")
	for _, w := range []string{"::warning title=udgam-ci%3A no PR comment::", "::warning title=udgam-ci%3A no check run::"} {
		if !strings.Contains(fork.log, w) {
			t.Errorf("the fork's log lacks %q", w)
		}
	}
	if n := len(ro.Comments(3)) + len(ro.Checks()); n != 0 {
		t.Errorf("a read-only token wrote %d comments or Check runs", n)
	}
}

// run runs the workflow under act for one event; name names the run in
// the test's log.
func (e *e2e) run(name string, j job) result {
	t := e.t
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if d := j.vars["CACHE_DIR"]; d != "" {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	event := filepath.Join(dir, "event.json")
	b, err := json.Marshal(j.payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(event, b, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{j.event, "-W", workflow, "-e", event, "--json",
		// Host mode: the steps run on this machine, with its Go and its
		// warm build cache; there is no Docker.
		"-P", "ubuntu-latest=-self-hosted",
		"--local-repository", "actions/cache@v4=" + e.cacheAction,
		"--local-repository", "actions/setup-go@v5=" + filepath.Join(e.root, "scripts/acte2e/setup-go-skipped"),
		"--cache-server-path", e.cacheServer, "--cache-server-addr", "127.0.0.1",
		"--env", "HF_ENDPOINT=" + e.hub.URL,
		"--env", "GITHUB_API_URL=" + j.gh.APIURL(),
		"--env", "GITHUB_REPOSITORY=" + repo,
		"--var", "UDGAM_SERVER_URL=" + e.serverURL,
		"--var", "DATA_COMMIT=" + dataRev,
	}
	for k, v := range j.vars {
		args = append(args, "--var", k+"="+v)
	}
	for k, v := range j.secrets {
		args = append(args, "--secret", k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), actTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.act, args...)
	cmd.Dir = e.root
	logPath := filepath.Join(dir, "act.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	runErr := cmd.Run()
	logFile.Close()
	logBytes, _ := os.ReadFile(logPath)
	r := result{err: runErr}
	r.log, r.summary, r.outputs = readLog(logBytes)
	if keep := os.Getenv("UDGAM_ACT_LOGS"); keep != "" {
		if err := os.WriteFile(filepath.Join(keep, name+".log"), []byte(r.log), 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Logf("act %s (%s): %v in %s", name, j.event, errOrOK(runErr), time.Since(start).Round(time.Second))
	if ctx.Err() != nil {
		t.Fatalf("act %s ran past %s; its log ends:\n%s", name, actTimeout, tail(r.log, 60))
	}
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		t.Fatalf("act %s did not run: %v", name, runErr)
	}
	if r.outputs == nil {
		t.Errorf("act %s: the step udgam set no outputs; its log ends:\n%s", name, tail(r.log, 60))
	}
	if (runErr != nil) != j.fails || t.Failed() || os.Getenv("UDGAM_ACT_VERBOSE") != "" {
		t.Logf("act %s log:\n%s", name, tail(r.log, 200))
	}
	return r
}

// logLine is one line of act's --json log.
type logLine struct {
	Msg     string   `json:"msg"`
	Command string   `json:"command"`
	Content string   `json:"content"` // a summary's
	Name    string   `json:"name"`    // a set-output's
	Arg     string   `json:"arg"`
	Stage   string   `json:"stage"`
	StepID  []string `json:"stepID"` // the composite's steps: [udgam run]
	Time    string   `json:"time"`
}

// readLog turns act's --json log into text, and finds the job summary and
// the Action's outputs.
//
// act gives each step its own summary file, as GitHub does, and logs what
// a step wrote to it; the Action's composite step logs it last, with every
// inner step's.
//
// The outputs are those action.yml's outputs: section maps, which act sets
// on the step udgam when its inner steps are done, before it logs the
// step's end. act then also reads the step's GITHUB_OUTPUT file, which
// still holds what the inner step run wrote there, and sets those too
// (GitHub does not): so steps.udgam.outputs in the workflow would hide a
// broken mapping whose output has its inner step's name, and the test
// reads the mapped values here instead.
func readLog(b []byte) (text, summary string, outputs map[string]string) {
	var sb strings.Builder
	mapped := false
	for _, line := range strings.Split(string(b), "\n") {
		var l logLine
		if json.Unmarshal([]byte(line), &l) != nil {
			sb.WriteString(line + "\n")
			continue
		}
		outer := len(l.StepID) == 1 && l.StepID[0] == "udgam" && l.Stage == "Main"
		switch {
		case l.Command == "summary":
			summary = l.Content
		case outer && l.Command == "set-output" && !mapped:
			if outputs == nil {
				outputs = map[string]string{}
			}
			outputs[l.Name] = l.Arg
		case outer && (strings.Contains(l.Msg, "Success - Main") || strings.Contains(l.Msg, "Failure - Main")):
			mapped = true
		}
		ts := l.Time
		if len(ts) >= 19 {
			ts = ts[11:19]
		}
		sb.WriteString(ts + " " + strings.TrimRight(l.Msg, "\n") + "\n")
	}
	return sb.String(), summary, outputs
}

// startHub publishes the three models (byte bigrams fitted on more and
// more text: the weaker, the baseline, the better) and the test data.
func (e *e2e) startHub() {
	t := e.t
	e.hub = hubtest.New(t)
	models := t.TempDir()
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, "run", "./scripts/demomodels", "-out", models, "-mid", "8192")
	cmd.Dir = e.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("making the models: %v\n%s", err, out)
	}
	for rev, file := range map[string]string{weakRev: "baseline.gguf", midRev: "mid.gguf", goodRev: "candidate.gguf"} {
		b, err := os.ReadFile(filepath.Join(models, file))
		if err != nil {
			t.Fatal(err)
		}
		e.hub.Add(model, rev, map[string][]byte{modelFile: b}, modelFile)
	}

	// Small sets, so that each job scores in seconds: the sentences of the
	// smoke sample's English prose as documents (a comparison needs 10) and
	// every tenth item of the core set.
	data := t.TempDir()
	smoke, err := fresh.Smoke()
	if err != nil {
		t.Fatal(err)
	}
	var docs []fresh.Document
	for _, d := range smoke.Docs {
		if d.Source != "smoke-prose" && d.Source != "smoke-tech" {
			continue
		}
		for i, p := range strings.SplitAfter(d.Text, ". ") {
			if p = strings.TrimSpace(p); len(p) >= 40 && len(docs) < 120 {
				docs = append(docs, fresh.Document{ID: fmt.Sprintf("%s-p%d", d.ID, i), Text: p, Source: d.Source})
			}
		}
	}
	if err := fresh.WriteJSONL(filepath.Join(data, "fresh.jsonl"), docs); err != nil {
		t.Fatal(err)
	}
	core, err := probes.Core()
	if err != nil {
		t.Fatal(err)
	}
	var items []probes.Item
	for i := 0; i < len(core.Items); i += 10 {
		items = append(items, core.Items[i])
	}
	if err := probes.WriteFile(filepath.Join(data, "probes.jsonl"), items); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, name := range []string{"fresh.jsonl", "probes.jsonl"} {
		if files[name], err = os.ReadFile(filepath.Join(data, name)); err != nil {
			t.Fatal(err)
		}
	}
	e.hub.Add(dataset, dataRev, files)
}

// hubDownloads counts the file downloads the hub has answered.
func (e *e2e) hubDownloads() int {
	n := 0
	for _, r := range e.hub.Requests() {
		if strings.Contains(r, "/resolve/") {
			n++
		}
	}
	return n
}

var servingRE = regexp.MustCompile(`msg=serving addr=(\S+)`)

// startServer starts `udgam-ci serve` on a new SQLite file, with an upload
// token for the repository.
func (e *e2e) startServer() {
	t := e.t
	bin := os.Getenv("UDGAM_CI")
	if bin == "" {
		bin = filepath.Join(e.root, "bin", "udgam-ci")
	}
	db := filepath.Join(t.TempDir(), "runs.db")
	out, err := exec.Command(bin, "server", "token", "create", "--db", db, "--repo", repo).Output()
	if err != nil {
		t.Fatalf("server token create: %v", err)
	}
	e.serverToken = strings.TrimSpace(string(out))
	cmd := exec.Command(bin, "serve", "--db", db, "--addr", "127.0.0.1:0", "--log-text")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("udgam-ci serve: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case a := <-addr:
		e.serverURL = "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("udgam-ci serve did not say where it listens within 30 s")
	}
}

func repoJSON(fullName string) map[string]any {
	return map[string]any{"full_name": fullName, "default_branch": "main"}
}

// prPayload is a pull_request event from headRepo (another repository
// than repo: a fork).
func prPayload(number int, ref, sha, headRepo string) map[string]any {
	return map[string]any{
		"action": "synchronize",
		"number": number,
		"pull_request": map[string]any{
			"number": number,
			"head":   map[string]any{"ref": ref, "sha": sha, "repo": map[string]any{"full_name": headRepo, "fork": headRepo != repo}},
			"base":   map[string]any{"ref": "main", "repo": repoJSON(repo)},
		},
		"repository": repoJSON(repo),
	}
}

// wantOutputs checks outputs with exact values and others that must be
// set; every name must be one the Action declares.
func wantOutputs(t *testing.T, r result, exact map[string]string, set ...string) {
	t.Helper()
	declared := map[string]bool{}
	for _, n := range action.OutputNames() {
		declared[n] = true
	}
	for k, v := range exact {
		if !declared[k] {
			t.Errorf("output %s is not one of the Action's", k)
		}
		if got, ok := r.outputs[k]; !ok && v != "" || got != v {
			t.Errorf("output %s = %q, want %q (outputs %v)", k, got, v, r.outputs)
		}
	}
	for _, k := range set {
		if !declared[k] {
			t.Errorf("output %s is not one of the Action's", k)
		}
		if r.outputs[k] == "" {
			t.Errorf("output %s is empty (outputs %v)", k, r.outputs)
		}
	}
}

// wantSummary checks the job summary holds each string.
func wantSummary(t *testing.T, r result, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(r.summary, w) {
			t.Errorf("the job summary lacks %q:\n%s", w, r.summary)
		}
	}
}

// wantCheck checks the Check run of sha has the conclusion.
func wantCheck(t *testing.T, gh *actiontest.GitHub, sha, conclusion string) {
	t.Helper()
	for _, c := range gh.Checks() {
		if c.HeadSHA != sha {
			continue
		}
		if c.Name != action.CheckName(model) || c.Status != "completed" || c.Conclusion != conclusion {
			t.Errorf("Check run of %s: %q %s %s, want %q completed %s", sha, c.Name, c.Status, c.Conclusion, action.CheckName(model), conclusion)
		}
		return
	}
	t.Errorf("no Check run on %s", sha)
}

func errOrOK(err error) string {
	if err == nil {
		return "job succeeded"
	}
	return fmt.Sprintf("job failed (%v)", err)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
