package action_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/action"
	"github.com/udgamlabs/udgam-ci/action/actiontest"
	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/contamination"
	"github.com/udgamlabs/udgam-ci/fetch"
	"github.com/udgamlabs/udgam-ci/ggufspec"
	"github.com/udgamlabs/udgam-ci/hub"
	"github.com/udgamlabs/udgam-ci/hub/hubtest"
	"github.com/udgamlabs/udgam-ci/internal/goldentest"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	headSHA = "1111111111111111111111111111111111111111"
	baseSHA = "2222222222222222222222222222222222222222"
	repo    = "acme/train"
	model   = "acme/tiny"
	token   = "ghs_test_token"
)

// fakeScorer writes hand-made runs whose scores depend on the model
// revision, after checking the GGUF it was given is a real one.
type fakeScorer struct {
	mu     sync.Mutex
	scores map[string]map[string]float64 // revision -> test -> score
	engine string
	calls  []string // "test@revision"
	scans  []string // the contamination report each call was given
	seqs   []*action.SequentialRequest
	data   []string // "test@revision data" of each call
}

func (s *fakeScorer) Score(ctx context.Context, req action.ScoreRequest) (*runfile.Run, error) {
	info, err := runner.ReadInfo(req.Model)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.calls = append(s.calls, req.Test+"@"+req.ModelRevision)
	s.scans = append(s.scans, req.Contamination)
	s.seqs = append(s.seqs, req.Sequential)
	s.data = append(s.data, req.Test+"@"+req.ModelRevision+" "+req.Data)
	score := s.scores[req.ModelRevision][req.Test]
	s.mu.Unlock()
	if score == 0 {
		return nil, fmt.Errorf("fake scorer: no score for %s@%s", req.Test, req.ModelRevision)
	}
	pr := 0
	if req.Git.PR != nil {
		pr = *req.Git.PR
	}
	run := servertest.Spec{
		ID: req.Test + "-" + req.ModelRevision[:min(8, len(req.ModelRevision))], Test: req.Test, Model: req.ModelName, Revision: req.ModelRevision,
		Repo: req.Git.Repo, Ref: req.Git.Ref, PR: pr, Records: 140, Score: score, Seed: 7, Engine: s.engine, Window: req.Window,
	}.Run()
	run.Header.Model.SHA256 = info.SHA256
	run.Header.Git.SHA = req.Git.SHA
	return run, runfile.WriteFile(req.Out, run)
}

func (s *fakeScorer) count(call string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c == call {
			n++
		}
	}
	return n
}

// fakeServer is the report server as the action sees it.
type fakeServer struct {
	baselines map[string]*runfile.Run // test -> run
	anchors   map[string]*runfile.Run // test -> run
	uploads   []string                // "test base_ref"
}

func (f *fakeServer) Upload(ctx context.Context, run *runfile.Run, baseRef string) (action.Uploaded, error) {
	f.uploads = append(f.uploads, run.Header.Test+" "+baseRef)
	return action.Uploaded{URL: "https://evals.example/runs/" + run.Header.ID}, nil
}

func (f *fakeServer) Baseline(ctx context.Context, repo, model, test, ref string) (*runfile.Run, error) {
	return f.baselines[test], nil
}

func (f *fakeServer) Anchor(ctx context.Context, repo, model, test string) (*runfile.Run, error) {
	return f.anchors[test], nil
}

func (f *fakeServer) Run(ctx context.Context, id string) (*runfile.Run, error) {
	for _, r := range f.anchors {
		if r.Header.ID == id {
			return r, nil
		}
	}
	return nil, fmt.Errorf("run %s: %w", id, client.ErrNotFound)
}

func (f *fakeServer) UploadAudit(ctx context.Context, rep *audit.Report, dir string) (action.Uploaded, error) {
	f.uploads = append(f.uploads, "audit "+string(rep.Verdict))
	return action.Uploaded{URL: "https://evals.example/audits/a1"}, nil
}

// world is one set of fakes shared by consecutive action runs.
type world struct {
	t      *testing.T
	gh     *actiontest.GitHub
	hub    *hubtest.Hub
	scorer *fakeScorer
	// score, when set, scores instead of scorer.
	score  action.Scorer
	server *fakeServer
	cache  string
	// newServer connects to the report server; the fake unless a test
	// swaps in the real client.
	newServer func(url, token string) action.Server
	// scan is the contamination scan the training-data input runs.
	scan func(ctx context.Context, req action.ScanRequest) (*contamination.Report, error)
	// audit is the artifact audit the artifact input runs.
	audit func(ctx context.Context, req action.AuditRequest) (*audit.Report, error)
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, gh: actiontest.NewGitHub(t, repo, token), hub: hubtest.New(t), cache: t.TempDir(),
		scorer: &fakeScorer{engine: ggufspec.EngineVersion(), scores: map[string]map[string]float64{
			baseSHA: {"fresh": 0.95, "probes": 45},
		}}, server: &fakeServer{}}
	w.newServer = func(url, token string) action.Server { return w.server }
	for i, sha := range []string{headSHA, baseSHA} {
		dir := t.TempDir()
		m := converttest.Small
		m.Seed = uint64(i + 1)
		if _, err := m.Write(dir); err != nil {
			t.Fatal(err)
		}
		if err := w.hub.AddDir(model, sha, dir); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// outcome is what one action run left behind.
type outcome struct {
	res     action.Result
	err     error
	log     string
	outputs map[string]string
	summary string
}

// run runs the action for an event with inputs (names as in action.yml).
func (w *world) run(event string, payload string, inputs map[string]string) outcome {
	t := w.t
	dir := t.TempDir()
	files := map[string]string{}
	for _, n := range []string{"event.json", "output", "summary"} {
		files[n] = filepath.Join(dir, n)
	}
	if err := os.WriteFile(files["event.json"], []byte(payload), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": files["event.json"], "GITHUB_REPOSITORY": repo,
		"GITHUB_API_URL": w.gh.APIURL(), "GITHUB_SERVER_URL": "https://github.example", "GITHUB_RUN_ID": "99",
		"GITHUB_OUTPUT": files["output"], "GITHUB_STEP_SUMMARY": files["summary"],
		"INPUT_GITHUB-TOKEN": token, "INPUT_CACHE-DIR": w.cache, "INPUT_WORK-DIR": filepath.Join(dir, "runs"),
		"INPUT_RESAMPLES": "500",
	}
	for k, v := range inputs {
		env["INPUT_"+strings.ToUpper(k)] = v
	}
	var log bytes.Buffer
	deps := action.Deps{
		Getenv: func(k string) string { return env[k] },
		Out:    &log,
		Hub: func(cacheDir string) fetch.Hub {
			c := hub.New(func(k string) string {
				return map[string]string{"HF_ENDPOINT": w.hub.URL, "UDGAM_CI_CACHE": cacheDir}[k]
			})
			c.HTTP = &http.Client{}
			return c
		},
		Scorer: action.Scorer(w.scorer),
		Server: w.newServer,
		Scan:   w.scan,
		Audit:  w.audit,
	}
	if w.score != nil {
		deps.Scorer = w.score
	}
	res, err := action.Run(context.Background(), deps)
	out, _ := os.ReadFile(files["output"])
	sum, _ := os.ReadFile(files["summary"])
	return outcome{res: res, err: err, log: log.String(), outputs: parseOutputs(t, string(out)), summary: string(sum)}
}

// parseOutputs reads GITHUB_OUTPUT's "name<<DELIM\nvalue\nDELIM" records.
func parseOutputs(t *testing.T, s string) map[string]string {
	out := map[string]string{}
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		name, delim, ok := strings.Cut(lines[i], "<<")
		if !ok {
			continue
		}
		var val []string
		for i++; i < len(lines) && lines[i] != delim; i++ {
			val = append(val, lines[i])
		}
		out[name] = strings.Join(val, "\n")
	}
	return out
}

func prPayload(pr int) string {
	return fmt.Sprintf(`{"number":%d,"pull_request":{"number":%[1]d,"head":{"ref":"feat/longer-warmup","sha":"%s"},"base":{"ref":"main"}},
		"repository":{"full_name":%q,"default_branch":"main"}}`, pr, strings.Repeat("9", 40), repo)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	goldentest.Check(t, filepath.Join("testdata", name), []byte(got), *update)
}

// goldenComment checks a PR holds exactly one udgam-ci comment, as golden.
func goldenComment(t *testing.T, gh *actiontest.GitHub, pr int, name string) {
	t.Helper()
	cs := ourComments(gh, pr)
	if len(cs) != 1 {
		t.Fatalf("PR %d has %d udgam-ci comments, want 1", pr, len(cs))
	}
	golden(t, name, cs[0].Body)
}

func ourComments(gh *actiontest.GitHub, pr int) []actiontest.Comment {
	var out []actiontest.Comment
	for _, c := range gh.Comments(pr) {
		if strings.Contains(c.Body, "<!-- udgam-ci: model="+model+" -->") {
			out = append(out, c)
		}
	}
	return out
}

func TestActionCommentsOnceAndEditsInPlace(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.90, "probes": 60}
	w.gh.PerPage = 3
	w.gh.Seed(5, 4) // reviewers' comments before ours
	inputs := map[string]string{"model": model, "revision": headSHA, "baseline": "revision:" + baseSHA}

	first := w.run("pull_request", prPayload(5), inputs)
	if first.err != nil {
		t.Fatalf("%v\n%s", first.err, first.log)
	}
	if first.res.ExitCode != 0 || first.res.Comment == nil || !first.res.Comment.Created {
		t.Fatalf("first run: exit %d, comment %+v\n%s", first.res.ExitCode, first.res.Comment, first.log)
	}
	cs := ourComments(w.gh, 5)
	if len(cs) != 1 {
		t.Fatalf("%d udgam-ci comments after the first run", len(cs))
	}
	golden(t, "comment_improved.md", cs[0].Body)

	// The head model was fetched at the PR's revision, converted and recorded.
	head, err := runfile.ReadFile(first.outputs["probes-run-file"])
	if err != nil {
		t.Fatal(err)
	}
	hm := head.Header.Model
	if hm.Revision != headSHA || hm.Conversion == nil || hm.Conversion.Dtype != "f32" || hm.Conversion.Source != model+"@"+headSHA || len(hm.SHA256) != 64 {
		t.Errorf("head model %+v", hm)
	}
	if pr := head.Header.Git.PR; pr == nil || *pr != 5 || head.Header.Git.Ref != "feat/longer-warmup" || head.Header.Git.SHA != strings.Repeat("9", 40) {
		t.Errorf("head git %+v", head.Header.Git)
	}
	fresh, err := runfile.ReadFile(first.outputs["fresh-run-file"])
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"verdict": "improved", "probes-verdict": "improved", "fresh-verdict": "improved",
		"probes-score":      fmt.Sprintf("%.2f", runfile.SummarizeProbes(head.Items).Accuracy),
		"fresh-score":       fmt.Sprintf("%.4f", runfile.SummarizeFresh(fresh.Docs).BPB),
		"fresh-delta":       "-0.0500", // every document's bpb moved by the same 0.05
		"settings-mismatch": "false", "comment-url": cs[0].HTMLURL,
	} {
		if got := first.outputs[k]; got != want {
			t.Errorf("output %s = %q, want %q", k, got, want)
		}
	}
	if !strings.Contains(first.summary, "Probe Suite") || strings.Contains(first.summary, "<!-- udgam-ci") {
		t.Errorf("job summary:\n%s", first.summary)
	}
	if !strings.Contains(first.log, "::add-mask::"+token) || strings.Index(first.log, "::add-mask::") != 0 {
		t.Errorf("the token is not masked first:\n%s", first.log)
	}

	// A new push to the PR: the same comment is edited, the baseline's runs
	// come from the cache.
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.88, "probes": 70}
	second := w.run("pull_request", prPayload(5), inputs)
	if second.err != nil || second.res.ExitCode != 0 {
		t.Fatalf("second run: %v exit %d\n%s", second.err, second.res.ExitCode, second.log)
	}
	cs2 := ourComments(w.gh, 5)
	if len(cs2) != 1 || cs2[0].ID != cs[0].ID || second.res.Comment.Created {
		t.Fatalf("second run: %d comments (ids %v then %v)", len(cs2), cs[0].ID, cs2)
	}
	if cs2[0].Body == cs[0].Body || !strings.Contains(cs2[0].Body, second.outputs["probes-score"][:4]) {
		t.Errorf("the comment was not updated with the new scores")
	}
	if n := w.scorer.count("probes@" + baseSHA); n != 1 {
		t.Errorf("baseline probes scored %d times; the cached run should be reused", n)
	}
	if len(w.gh.Comments(5)) != 5 {
		t.Errorf("%d comments in the thread, want the 4 reviewers' and ours", len(w.gh.Comments(5)))
	}

	// The same result again (a rerun of the job): the comment is not
	// edited, since it already says this.
	third := w.run("pull_request", prPayload(5), inputs)
	if third.err != nil || third.res.Comment == nil || !third.res.Comment.Unchanged {
		t.Fatalf("third run: %v, comment %+v\n%s", third.err, third.res.Comment, third.log)
	}
	patches := 0
	for _, l := range w.gh.Log() {
		if strings.HasPrefix(l, "PATCH /api/v3/repos/"+repo+"/issues/comments/") {
			patches++
		}
	}
	if patches != 1 {
		t.Errorf("%d comment edits over three runs, want 1 (the rerun changes nothing)", patches)
	}

	// One Check run for the model on the PR's head commit: created by the
	// first run, updated by the others, concluded success (improved).
	checks := w.gh.Checks()
	if len(checks) != 1 {
		t.Fatalf("%d check runs, want 1: %+v", len(checks), checks)
	}
	c := checks[0]
	if c.Name != "udgam-ci: "+model || c.HeadSHA != strings.Repeat("9", 40) || c.Status != "completed" || c.Conclusion != "success" || c.Updates != 2 {
		t.Errorf("check run %+v", c)
	}
	if c.Output.Title != "This job passes (fail-on: regression)." || !strings.Contains(c.Output.Summary, "| Probe Suite (accuracy % ↑) |") {
		t.Errorf("check run output %+v", c.Output)
	}
	if third.res.Check == nil || third.res.Check.Created {
		t.Errorf("third run's check %+v, want the existing one updated", third.res.Check)
	}
}

// A fork PR's token cannot write: the comment and the Check run are
// warnings, the evaluation stands.
func TestActionReadOnlyTokenWarns(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.90, "probes": 60}
	w.gh.ReadOnly = true
	o := w.run("pull_request", prPayload(6), map[string]string{"model": model, "revision": headSHA, "baseline": "revision:" + baseSHA})
	if o.err != nil || o.res.ExitCode != 0 || o.res.Check != nil || o.res.Comment != nil {
		t.Fatalf("%v exit %d check %+v comment %+v\n%s", o.err, o.res.ExitCode, o.res.Check, o.res.Comment, o.log)
	}
	for _, want := range []string{"::warning title=udgam-ci%3A no check run::", "checks: write", "::warning title=udgam-ci%3A no PR comment::"} {
		if !strings.Contains(o.log, want) {
			t.Errorf("log lacks %q:\n%s", want, o.log)
		}
	}
}

func TestActionRegressionFails(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.95, "probes": 30}
	tests := []struct {
		failOn  string
		exit    int
		annot   string
		verdict string // the comment's line under the data
	}{
		{"regression", 1, "::error title=udgam-ci%3A probes regressed::acme/tiny probes regressed: accuracy 42.9 -> 29.3, delta -13.6 points (95%25 interval [-25.7, -3.6]) against baseline run probes-22222222",
			"**This job fails because of: probes regressed (fail-on: regression)."},
		{"never", 0, "::warning title=udgam-ci%3A probes regressed::", "**This job passes (fail-on: never), with warnings: probes regressed.**"},
	}
	for _, tt := range tests {
		t.Run(tt.failOn, func(t *testing.T) {
			o := w.run("pull_request", prPayload(8), map[string]string{"model": model, "revision": headSHA,
				"baseline": "revision:" + baseSHA, "fail-on": tt.failOn})
			if o.err != nil {
				t.Fatalf("%v\n%s", o.err, o.log)
			}
			if o.res.ExitCode != tt.exit {
				t.Errorf("exit %d, want %d\n%s", o.res.ExitCode, tt.exit, o.log)
			}
			if !strings.Contains(o.log, tt.annot) {
				t.Errorf("log lacks %q:\n%s", tt.annot, o.log)
			}
			if cs := ourComments(w.gh, 8); len(cs) != 1 || !strings.Contains(strings.SplitN(cs[0].Body, "| Test |", 2)[0], tt.verdict) {
				t.Errorf("the comment does not say %q above its table:\n%v", tt.verdict, cs)
			}
			if o.outputs["verdict"] != "regressed" || o.outputs["probes-verdict"] != "regressed" || o.outputs["fresh-verdict"] != "no change" {
				t.Errorf("outputs %v", o.outputs)
			}
		})
	}
	goldenComment(t, w.gh, 8, "comment_regressed.md")
}

// The Check run's conclusion follows fail-on: failure with a failure
// annotation per regression when the job fails, neutral with a warning one
// when fail-on is never; the second job updates the first one's run.
func TestActionCheckConclusionFollowsFailOn(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.95, "probes": 30}
	for i, tt := range []struct{ failOn, conclusion, level string }{
		{"regression", "failure", "failure"},
		{"never", "neutral", "warning"},
	} {
		o := w.run("pull_request", prPayload(8), map[string]string{"model": model, "revision": headSHA,
			"baseline": "revision:" + baseSHA, "fail-on": tt.failOn})
		if o.err != nil {
			t.Fatalf("%v\n%s", o.err, o.log)
		}
		checks := w.gh.Checks()
		if len(checks) != 1 {
			t.Fatalf("fail-on %s: %d check runs, want 1", tt.failOn, len(checks))
		}
		c := checks[0]
		if c.Conclusion != tt.conclusion || c.Updates != i || o.res.Check == nil || o.res.Check.Created != (i == 0) {
			t.Errorf("fail-on %s: check %+v, result %+v", tt.failOn, c, o.res.Check)
		}
		a := c.Annotations[len(c.Annotations)-1]
		if a.AnnotationLevel != tt.level || a.Title != "udgam-ci: probes regressed" || !strings.Contains(a.Message, "probes regressed: accuracy 42.9 -> 29.3") {
			t.Errorf("fail-on %s: annotation %+v", tt.failOn, a)
		}
	}
}

func TestActionSettingsMismatch(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.95, "probes": 45}
	// Baseline run files made by another engine build.
	dir := t.TempDir()
	var files []string
	for _, test := range []string{"fresh", "probes"} {
		score := map[string]float64{"fresh": 0.95, "probes": 45}[test]
		run := servertest.Spec{ID: test + "-base", Test: test, Model: model, Revision: baseSHA, Repo: repo, Records: 140,
			Score: score, Seed: 7, Engine: "llama.cpp 0000000 (other build)", Window: 2048}.Run()
		p := filepath.Join(dir, test+".jsonl")
		if err := runfile.WriteFile(p, run); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	tests := []struct {
		failOn string
		exit   int
		annot  string
	}{
		{"settings-mismatch", 1, "::error title=udgam-ci%3A settings mismatch::"},
		{"regression", 0, "::warning title=udgam-ci%3A settings mismatch::"},
	}
	for _, tt := range tests {
		t.Run(tt.failOn, func(t *testing.T) {
			o := w.run("pull_request", prPayload(3), map[string]string{"model": model, "revision": headSHA,
				"baseline": strings.Join(files, ","), "fail-on": tt.failOn})
			if o.err != nil {
				t.Fatalf("%v\n%s", o.err, o.log)
			}
			if o.res.ExitCode != tt.exit || !o.res.Mismatch || o.outputs["settings-mismatch"] != "true" {
				t.Errorf("exit %d (want %d), mismatch %v", o.res.ExitCode, tt.exit, o.res.Mismatch)
			}
			if !strings.Contains(o.log, tt.annot) || !strings.Contains(o.log, "engine: llama.cpp 0000000 (other build) -> "+ggufspec.EngineVersion()) {
				t.Errorf("log lacks the mismatch annotation naming the engine:\n%s", o.log)
			}
		})
	}
	goldenComment(t, w.gh, 3, "comment_mismatch.md")
}

func TestActionServerDownOnlyWarns(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.93, "probes": 50}
	// The real client, against a server that has stopped listening.
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	w.newServer = func(url, token string) action.Server { return action.NewServer(url, token, nil) }
	o := w.run("pull_request", prPayload(4), map[string]string{"model": model, "revision": headSHA,
		"server-url": down.URL, "server-token": "srv-secret"})
	if o.err != nil {
		t.Fatalf("%v\n%s", o.err, o.log)
	}
	if o.res.ExitCode != 0 {
		t.Errorf("exit %d, want 0", o.res.ExitCode)
	}
	if !strings.Contains(o.log, "::add-mask::srv-secret") {
		t.Error("the server token is not masked")
	}
	if strings.Count(o.log, "::warning title=udgam-ci%3A report server unavailable::") != 4 { // 2 baselines + 2 uploads
		t.Errorf("want a warning per failed baseline and upload:\n%s", o.log)
	}
	// The evaluation is not lost: scores are outputs and the run files exist.
	if o.outputs["probes-score"] == "" || o.outputs["fresh-score"] == "" || o.outputs["verdict"] != "none" {
		t.Errorf("outputs %v", o.outputs)
	}
	for _, p := range strings.Split(o.outputs["run-files"], ",") {
		if _, err := runfile.ReadFile(p); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(o.summary, "connection refused") || !strings.Contains(o.summary, "| probes | accuracy |") {
		t.Errorf("summary:\n%s", o.summary)
	}
	if len(ourComments(w.gh, 4)) != 0 {
		t.Error("commented without a comparison")
	}
}

func TestActionPushRecordsBaseline(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// A local safetensors checkpoint, converted in the job.
	dir := t.TempDir()
	if _, err := converttest.Small.Write(dir); err != nil {
		t.Fatal(err)
	}
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.91, "probes": 55}
	payload := fmt.Sprintf(`{"ref":"refs/heads/main","after":"%s","repository":{"full_name":%q,"default_branch":"main"}}`, strings.Repeat("8", 40), repo)
	o := w.run("push", payload, map[string]string{"model": dir, "model-name": model, "revision": headSHA,
		"server-url": "https://evals.example", "server-token": "srv", "dtype": "q8_0"})
	if o.err != nil {
		t.Fatalf("%v\n%s", o.err, o.log)
	}
	if o.res.ExitCode != 0 || len(o.res.Comparisons) != 0 || len(w.gh.Log()) != 0 {
		t.Errorf("push: exit %d, %d comparisons, GitHub requests %v", o.res.ExitCode, len(o.res.Comparisons), w.gh.Log())
	}
	if got := strings.Join(w.server.uploads, ", "); got != "fresh main, probes main" {
		t.Errorf("uploads %q, want both runs as main's baseline", got)
	}
	run, err := runfile.ReadFile(o.outputs["fresh-run-file"])
	if err != nil {
		t.Fatal(err)
	}
	if c := run.Header.Model.Conversion; c == nil || c.Dtype != "q8_0" || c.Source != dir {
		t.Errorf("conversion %+v", c)
	}
	if o.outputs["run-url"] != "https://evals.example/runs/fresh-11111111" || o.outputs["verdict"] != "none" {
		t.Errorf("outputs %v", o.outputs)
	}
	golden(t, "summary_push.md", o.summary)
}

func TestActionBadInputsFailClearly(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	o := w.run("pull_request", prPayload(1), map[string]string{"model": model, "revision": "main"})
	if o.err == nil || o.res.ExitCode != 1 {
		t.Fatalf("err %v, exit %d", o.err, o.res.ExitCode)
	}
	if !strings.Contains(o.log, "::error title=udgam-ci%3A invalid inputs::invalid inputs: input revision:") {
		t.Errorf("log:\n%s", o.log)
	}
}

// TestActionWithReportServer runs a push (recording main's baseline) and
// then a PR compared with that baseline, against the real report server.
func TestActionWithReportServer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	live := servertest.Start(t, server.Config{}, repo, "evil/repo")
	w.newServer = func(url, token string) action.Server { return action.NewServer(url, token, nil) }

	w.scorer.scores[baseSHA] = map[string]float64{"fresh": 0.95, "probes": 45}
	push := fmt.Sprintf(`{"ref":"refs/heads/main","after":"%s","repository":{"full_name":%q,"default_branch":"main"}}`, strings.Repeat("8", 40), repo)
	o := w.run("push", push, map[string]string{"model": model, "revision": baseSHA, "baseline": "server",
		"server-url": live.URL, "server-token": live.Tokens[0]})
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("push: %v exit %d\n%s", o.err, o.res.ExitCode, o.log)
	}
	if !strings.HasPrefix(o.outputs["run-url"], live.URL+"/runs/") {
		t.Errorf("run-url %q", o.outputs["run-url"])
	}

	// Another repository's token uploads runs named like acme's model, on
	// main and newer: they are evil/repo's own model, never acme's baseline.
	ec := &client.Client{BaseURL: live.URL, Token: live.Tokens[1]}
	for _, test := range []string{"fresh", "probes"} {
		sp := servertest.Spec{ID: "evil-" + test, Test: test, Model: model, Repo: "evil/repo", Records: 140,
			Started: time.Now().Add(time.Hour), Engine: "evil engine"}
		if _, err := ec.Upload(ctx, bytes.NewReader(sp.Body())); err != nil {
			t.Fatal(err)
		}
	}

	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.95, "probes": 30}
	o = w.run("pull_request", prPayload(6), map[string]string{"model": model, "revision": headSHA, "baseline": "server",
		"server-url": live.URL, "server-token": live.Tokens[0]})
	if o.err != nil {
		t.Fatalf("pr: %v\n%s", o.err, o.log)
	}
	if o.res.ExitCode != 1 || len(o.res.Comparisons) != 2 {
		t.Fatalf("pr: exit %d, %d comparisons\n%s", o.res.ExitCode, len(o.res.Comparisons), o.log)
	}
	for _, c := range o.res.Comparisons {
		if c.BaseRun.Revision != baseSHA {
			t.Errorf("%s compared with %+v, want the pushed baseline", c.Test, c.BaseRun)
		}
	}
	cs := ourComments(w.gh, 6)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, live.URL+"/runs/") {
		t.Errorf("comment does not link the uploaded runs: %+v", cs)
	}
}

func TestActionForkPatterns(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.90, "probes": 60}
	inputs := map[string]string{"model": model, "revision": headSHA, "baseline": "revision:" + baseSHA}

	// pull_request from a fork: the token is read-only, so the comment
	// fails; the evaluation still passes and says how to fix it.
	w.gh.ReadOnly = true
	o := w.run("pull_request", prPayload(11), inputs)
	if o.err != nil || o.res.ExitCode != 0 || o.res.Comment != nil {
		t.Fatalf("read-only token: err %v, exit %d, comment %+v", o.err, o.res.ExitCode, o.res.Comment)
	}
	if !strings.Contains(o.log, "::warning title=udgam-ci%3A no PR comment::") || !strings.Contains(o.log, "pull_request_target / workflow_run") {
		t.Errorf("no warning pointing at the fork pattern:\n%s", o.log)
	}
	if !strings.Contains(o.summary, "Probe Suite") {
		t.Error("the comparison is missing from the job summary")
	}

	// workflow_run of a fork's PR: the payload lists no pull request, the
	// pr input names it, and the trusted run comments there.
	w.gh.ReadOnly = false
	payload := fmt.Sprintf(`{"workflow_run":{"event":"pull_request","head_branch":"patch-1","head_sha":"%s","pull_requests":[]},
		"repository":{"full_name":%q,"default_branch":"main"}}`, strings.Repeat("7", 40), repo)
	inputs["pr"] = "11"
	o = w.run("workflow_run", payload, inputs)
	if o.err != nil || o.res.ExitCode != 0 || o.res.Comment == nil || !o.res.Comment.Created {
		t.Fatalf("workflow_run: err %v, exit %d, comment %+v\n%s", o.err, o.res.ExitCode, o.res.Comment, o.log)
	}
	if len(ourComments(w.gh, 11)) != 1 {
		t.Errorf("PR 11 has %d udgam-ci comments", len(ourComments(w.gh, 11)))
	}
	run, err := runfile.ReadFile(o.outputs["probes-run-file"])
	if err != nil {
		t.Fatal(err)
	}
	if g := run.Header.Git; g.PR == nil || *g.PR != 11 || g.Ref != "patch-1" || g.SHA != strings.Repeat("7", 40) {
		t.Errorf("head git %+v", g)
	}
}

func TestActionFailuresAreAnnotated(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.90, "probes": 60}

	// A revision the hub does not have: the evaluation cannot be done.
	o := w.run("pull_request", prPayload(2), map[string]string{"model": model, "revision": strings.Repeat("4", 40)})
	if o.err == nil || o.res.ExitCode != 1 || !strings.Contains(o.log, "::error title=udgam-ci%3A evaluation failed::") {
		t.Errorf("missing revision: err %v, exit %d\n%s", o.err, o.res.ExitCode, o.log)
	}

	// A baseline that shares too few records: warned, the scores stand.
	small := servertest.Spec{ID: "probes-small", Test: "probes", Model: model, Repo: repo, Records: 5, Score: 45, Seed: 7,
		Engine: ggufspec.EngineVersion()}.Run()
	p := filepath.Join(t.TempDir(), "probes.jsonl")
	if err := runfile.WriteFile(p, small); err != nil {
		t.Fatal(err)
	}
	o = w.run("pull_request", prPayload(2), map[string]string{"model": model, "revision": headSHA, "tests": "probes", "baseline": p})
	if o.err != nil || o.res.ExitCode != 0 || len(o.res.Comparisons) != 0 {
		t.Fatalf("small baseline: err %v, exit %d, %d comparisons", o.err, o.res.ExitCode, len(o.res.Comparisons))
	}
	if !strings.Contains(o.log, "::warning title=udgam-ci%3A no comparison::probes: ") || !strings.Contains(o.log, "share 5 records") {
		t.Errorf("log:\n%s", o.log)
	}

	// The default baseline (server) without a server: warned, scores stand.
	o = w.run("pull_request", prPayload(2), map[string]string{"model": model, "revision": headSHA, "tests": "probes"})
	if o.err != nil || o.res.ExitCode != 0 || !strings.Contains(o.log, "::warning title=udgam-ci%3A no baseline::baseline: server needs server-url") {
		t.Errorf("no server: err %v, exit %d\n%s", o.err, o.res.ExitCode, o.log)
	}
}

func TestActionLocalGGUFKeepsItsProvenance(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores["local"] = map[string]float64{"fresh": 0.9, "probes": 50}
	dir := t.TempDir()
	if _, err := converttest.Small.Write(filepath.Join(dir, "ckpt")); err != nil {
		t.Fatal(err)
	}
	gguf := filepath.Join(dir, "m.gguf")
	res, err := convert.Dir(filepath.Join(dir, "ckpt"), gguf, convert.Options{Dtype: "bf16", Source: "acme/tiny@" + headSHA})
	if err != nil {
		t.Fatal(err)
	}
	o := w.run("pull_request", prPayload(9), map[string]string{"model": gguf, "model-name": model, "revision": "local", "baseline": "none", "tests": "fresh"})
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("err %v, exit %d\n%s", o.err, o.res.ExitCode, o.log)
	}
	if c := o.res.Heads[0].Header.Model.Conversion; c == nil || *c != res.Conversion {
		t.Errorf("run header conversion %+v, want %+v", c, res.Conversion)
	}
}

func TestActionResolvesUnpinnedRevision(t *testing.T) {
	t.Parallel()
	w := newWorld(t) // the hub's main branch points at baseSHA
	o := w.run("pull_request", prPayload(12), map[string]string{"model": model, "revision": "main", "allow-unpinned": "true",
		"baseline": "none", "tests": "probes"})
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("err %v, exit %d\n%s", o.err, o.res.ExitCode, o.log)
	}
	if got := o.res.Heads[0].Header.Model.Revision; got != baseSHA {
		t.Errorf("recorded revision %q, want main's commit %s", got, baseSHA)
	}
	if !strings.Contains(o.log, "::notice::acme/tiny revision main resolved to commit "+baseSHA) {
		t.Errorf("the resolution is not announced:\n%s", o.log)
	}
}
