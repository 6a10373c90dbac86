package action

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sethvargo/go-githubactions"
	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/contamination"
	"github.com/udgamlabs/udgam-ci/fetch"
	"github.com/udgamlabs/udgam-ci/ggufspec"
	"github.com/udgamlabs/udgam-ci/internal/release"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Result is what one action run concluded.
type Result struct {
	Heads       []*runfile.Run
	HeadFiles   []string
	Comparisons []*compare.Comparison
	Comment     *CommentResult // nil when no comment was written
	Check       *CheckResult   // nil when no Check run was written
	Mismatch    bool           // a judged settings difference, local or flagged by the server
	Regressions []*compare.Comparison
	// Anchors compare each head run with its test's anchor run; Drifts
	// are those beyond the drift budget, AnchorErrors the anchors named
	// that could not be compared.
	Anchors      []*compare.Comparison
	Drifts       []*compare.Comparison
	AnchorErrors []string
	ExitCode     int
}

// actionRun holds one action run's state.
type actionRun struct {
	d     Deps
	a     *githubactions.Action
	in    Inputs
	ev    Event
	srv   Server
	hub   fetch.Hub
	notes []string // warnings also shown in the summary

	scanReport *contamination.Report // the training-data scan; nil without one
	scanPath   string
	bases      map[string]*runfile.Run // by test, for the comparisons made
	early      map[string]*runfile.Run // by test, fetched before scoring (until: decided)

	headPath     string        // the scored GGUF
	headRevision string        // its model revision (a hub commit)
	auditReport  *audit.Report // the artifact audit; nil without one

	gateState *gateState   // the base's policy on a pull request; nil on a push
	effective GateSettings // the settings judged by, drift budget included
}

// Run is `udgam-ci action`: it reads inputs and the event, scores, compares,
// comments, uploads, writes outputs and returns the exit code fail-on asks
// for. An error means the evaluation itself could not be done.
func Run(ctx context.Context, d Deps) (Result, error) {
	a := githubactions.New(githubactions.WithGetenv(inputGetenv(d.Getenv)), githubactions.WithWriter(d.Out))
	// Mask secrets before anything else can print them.
	for _, name := range []string{"server-token", "github-token"} {
		if v := a.GetInput(name); v != "" {
			a.AddMask(v)
		}
	}
	in, err := ReadInputs(a, isLocal)
	if err != nil {
		a.WithFieldsMap(map[string]string{"title": "udgam-ci: invalid inputs"}).Errorf("%s", oneLine(err.Error()))
		return Result{ExitCode: 1}, err
	}
	ev, err := ReadEvent(d.Getenv)
	if err != nil {
		return Result{ExitCode: 1}, err
	}
	if in.PR != 0 && ev.PR == 0 {
		// Only where the event names none: a pull request must not borrow
		// another's number, and with it that one's label.
		ev.PR = in.PR
	}
	if in.CacheDir == "" {
		in.CacheDir = defaultCacheDir(d.Getenv)
	}
	r := &actionRun{d: d, a: a, in: in, ev: ev}
	if in.ServerURL != "" && d.Server != nil {
		r.srv = d.Server(in.ServerURL, in.ServerToken)
	}
	if d.Hub != nil {
		r.hub = d.Hub(filepath.Join(in.CacheDir, "hub"))
	}
	res, err := r.run(ctx)
	if err != nil {
		// Shown on the PR's checks, not only in the log.
		a.WithFieldsMap(map[string]string{"title": "udgam-ci: evaluation failed"}).Errorf("%s", oneLine(err.Error()))
		res.ExitCode = 1
	}
	return res, err
}

func defaultCacheDir(getenv func(string) string) string {
	if d := getenv("UDGAM_CI_CACHE"); d != "" {
		return d
	}
	if d := getenv("RUNNER_TEMP"); d != "" {
		return filepath.Join(d, "udgam-ci-cache")
	}
	return ".udgam-ci-cache"
}

func (r *actionRun) run(ctx context.Context) (Result, error) {
	var res Result
	r.a.Infof("udgam-ci %s: %s %s on %s (event %s, PR %d)", release.Version, r.in.ModelName, r.in.Revision, r.ev.Repo, r.ev.Kind, r.ev.PR)
	r.effective = r.in.gate()
	if err := r.applyPolicy(ctx); err != nil {
		return res, err
	}
	if err := r.scan(ctx); err != nil {
		return res, err
	}
	// A push to the base branch records the baseline: it scores every
	// record and compares nothing. A pull request scored until decided
	// needs its baselines first.
	compares := !r.ev.IsBaselinePush() && r.in.Baseline != BaselineNone
	reachable := !(r.in.Baseline == BaselineServer && r.srv == nil) // else compare says why not
	if compares && reachable && r.in.Until == UntilDecided {
		if err := r.prefetchBaselines(ctx); err != nil {
			return res, err
		}
	}
	if err := r.scoreHeads(ctx, &res); err != nil {
		return res, err
	}
	if err := r.audit(ctx); err != nil {
		return res, err
	}
	if compares {
		if err := r.compare(ctx, &res); err != nil {
			return res, err
		}
	}
	if !r.ev.IsBaselinePush() {
		if err := r.compareAnchors(ctx, &res); err != nil {
			return res, err
		}
	}
	judgeFamily(&res)
	var links []report.Link
	var flags []string
	if r.srv != nil {
		r.a.Group("Upload to " + r.in.ServerURL)
		links, flags = r.upload(ctx, res.Heads)
		links = append(links, r.uploadAudit(ctx)...)
		r.a.EndGroup()
		if len(flags) > 0 {
			res.Mismatch = true
		}
	}
	if err := r.publish(ctx, &res, links, flags); err != nil {
		return res, err
	}
	r.outputs(res, links)
	res.ExitCode = r.gate(res)
	return res, nil
}

// scoreHeads fetches the model and scores every requested test.
func (r *actionRun) scoreHeads(ctx context.Context, res *Result) error {
	in := r.in
	r.a.Group("Fetch model " + in.Model)
	head, err := r.model(ctx, in.Revision)
	r.a.EndGroup()
	if err != nil {
		return err
	}
	r.headPath, r.headRevision = head.Path, head.Model.Revision
	if in.FreshData == "" && slices.Contains(in.Tests, runfile.TestFresh) {
		r.a.WithFieldsMap(map[string]string{"title": "udgam-ci: smoke sample"}).Noticef(
			"fresh-data is empty, so Fresh Text scores the embedded smoke sample, not the benchmark; set fresh-data to the published set at a pinned commit")
	}
	for _, test := range in.Tests {
		r.a.Group("Score " + test + ": " + in.ModelName)
		out := filepath.Join(in.WorkDir, test+"-head.jsonl")
		run, err := r.score(ctx, test, head, out, r.headGit(), r.sequential(test))
		r.a.EndGroup()
		if err != nil {
			return err
		}
		res.Heads = append(res.Heads, run)
		res.HeadFiles = append(res.HeadFiles, out)
	}
	return nil
}

// compare gets the baselines and compares each head run with its own. A
// test without a usable baseline is a warning: the scores still stand.
func (r *actionRun) compare(ctx context.Context, res *Result) error {
	in := r.in
	if in.Baseline == BaselineServer && r.srv == nil {
		r.warn("no baseline", "baseline: server needs server-url; scores are reported without a comparison (or set baseline to revision:SHA, run files, or none)")
		return nil
	}
	tests := make([]string, len(res.Heads))
	for i, h := range res.Heads {
		tests[i] = h.Header.Test
	}
	bases, err := r.baselinesOnce(ctx, tests)
	if err != nil {
		return err
	}
	for i, head := range res.Heads {
		test := head.Header.Test
		if bases[i] == nil {
			r.warn("no baseline", "no %s baseline for %s (baseline: %s); scores are reported without a comparison", test, in.ModelName, in.Baseline)
			continue
		}
		c, err := compare.Runs(bases[i], head, r.compareOptions())
		if err != nil {
			r.warn("no comparison", "%s: %v", test, err)
			continue
		}
		res.Comparisons = append(res.Comparisons, c)
		if r.bases == nil {
			r.bases = map[string]*runfile.Run{}
		}
		r.bases[test] = bases[i]
		if c.Mismatch {
			res.Mismatch = true
		}
	}
	return nil
}

func (r *actionRun) compareOptions() compare.Options {
	o := compare.NewOptions()
	o.Resamples, o.Seed = r.in.Resamples, compare.DefaultSeed
	o.MinEffect = compare.MinEffect{BPB: r.in.MinEffectBPB, Accuracy: r.in.MinEffectAcc}
	o.AllowSettingsMismatch = true // compared, and flagged loudly
	return o
}

// publish writes the job summary and, on a pull request, the PR comment.
func (r *actionRun) publish(ctx context.Context, res *Result, links []report.Link, flags []string) error {
	if len(res.Comparisons) == 0 {
		notes := r.notes
		if r.scanReport != nil {
			notes = append(slices.Clone(notes), "Contamination: "+r.scanReport.Line())
		}
		md := scoresMarkdown(r.in.ModelName, res.Heads, links, notes) + report.AnchorMarkdown(res.Anchors) + gateMarkdown(r.gateState.lines()) + r.auditSection()
		r.summary(md)
		res.Check = r.check(ctx, *res, md)
		return nil
	}
	heads := map[string]*runfile.Run{}
	for _, h := range res.Heads {
		heads[h.Header.Test] = h
	}
	_, verdict := jobVerdict(r.in.FailOn, r.findings(*res))
	c := report.Comment{Model: r.in.ModelName, Tests: res.Comparisons, RunURLs: links, ServerFlags: flags,
		Contamination: r.contaminationView(res.Comparisons, r.bases, heads), Verdict: verdict, Gate: r.gateState.lines(),
		Anchors: res.Anchors}
	var body strings.Builder
	if err := report.RenderSummary(&body, c); err != nil {
		return err
	}
	body.WriteString(r.auditSection())
	r.summary(body.String())
	res.Check = r.check(ctx, *res, body.String())
	if r.ev.PR != 0 && r.in.Comment {
		res.Comment = r.comment(ctx, c)
	}
	return nil
}

// model returns the GGUF to score and what the run header should say of it.
func (r *actionRun) model(ctx context.Context, revision string) (fetch.Model, error) {
	in := r.in
	switch {
	case isLocal(in.Model) && strings.HasSuffix(in.Model, ".gguf"):
		// A GGUF made by `udgam-ci model fetch` says where it came from.
		conv, err := convert.ReadConversion(in.Model)
		if err != nil {
			return fetch.Model{}, err
		}
		return fetch.Model{Path: in.Model, Model: runfile.Model{Name: in.ModelName, Revision: revision,
			File: filepath.Base(in.Model), Conversion: conv}}, nil
	case isLocal(in.Model):
		out := filepath.Join(in.WorkDir, "model-"+in.Dtype+".gguf")
		m, res, err := fetch.Convert(in.Model, out, convert.Options{Dtype: in.Dtype, Subfolder: in.Subfolder, AllowUnverifiedTokenizer: in.AllowUnverifiedTokenizer})
		if err != nil {
			return fetch.Model{}, err
		}
		r.a.Infof("converted %s to %s (%s, sha256 %s)", in.Model, out, in.Dtype, res.SHA256)
		for _, line := range res.Tokenizer.Report {
			r.a.Infof("  %s", line)
		}
		m.Model.Name, m.Model.Revision = in.ModelName, revision
		return m, nil
	}
	if r.hub == nil {
		return fetch.Model{}, errors.New("no hub client to fetch " + in.Model)
	}
	m, err := fetch.Fetch(ctx, r.hub, fetch.Options{
		Repo: in.Model, Revision: revision, AllowUnpinned: in.AllowUnpinned, Dtype: in.Dtype,
		CacheDir: filepath.Join(in.CacheDir, "models"), Subfolder: in.Subfolder, AllowUnverifiedTokenizer: in.AllowUnverifiedTokenizer,
	})
	if err != nil {
		return m, err
	}
	if m.Model.Revision != revision {
		r.a.Noticef("%s revision %s resolved to commit %s", in.Model, revision, m.Model.Revision)
	}
	m.Model.Name = in.ModelName
	r.a.Infof("model %s@%s: %s (sha256 %s)", in.Model, m.Model.Revision, m.Path, m.Model.SHA256)
	return m, nil
}

// headGit is the training repository's commit the head runs belong to.
func (r *actionRun) headGit() runfile.Git {
	var pr *int
	if r.ev.PR != 0 {
		n := r.ev.PR
		pr = &n
	}
	return runfile.Git{Repo: r.ev.Repo, SHA: r.ev.SHA, Ref: r.ev.Ref, PR: pr}
}

// score runs one test and records the model's origin in the run header.
func (r *actionRun) score(ctx context.Context, test string, m fetch.Model, out string, git runfile.Git, seq *SequentialRequest) (*runfile.Run, error) {
	in := r.in
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	req := in.scoreRequest(test)
	req.Model, req.Out = m.Path, out
	req.ModelName, req.ModelRevision = m.Model.Name, m.Model.Revision
	req.Git, req.Contamination, req.Sequential = git, r.scanPath, seq
	run, err := r.d.Scorer.Score(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("score %s of %s: %w", test, in.ModelName, err)
	}
	if u := run.Header.Reused; u != nil {
		r.a.Noticef("%s of %s: %s", test, in.ModelName, u.Line())
	}
	// The scorer knows the GGUF; only the fetch knows where it came from.
	hm := &run.Header.Model
	hm.Name = m.Model.Name
	if m.Model.Revision != "" {
		hm.Revision = m.Model.Revision
	}
	if hm.Dtype == "" {
		hm.Dtype = m.Model.Dtype
	}
	if m.Model.Conversion != nil {
		hm.Conversion = m.Model.Conversion
	}
	if err := runfile.WriteFile(out, run); err != nil {
		return nil, fmt.Errorf("record model origin in %s: %w", out, err)
	}
	return run, nil
}

// baselines returns one baseline run per test (nil where none).
func (r *actionRun) baselines(ctx context.Context, tests []string) ([]*runfile.Run, error) {
	in := r.in
	out := make([]*runfile.Run, len(tests))
	switch {
	case in.Baseline == BaselineServer:
		ref := r.ev.BaseRef
		if ref == "" {
			ref = r.ev.Default
		}
		if ref == "" {
			ref = runfile.DefaultBaseRef
		}
		for i, test := range tests {
			b, err := r.srv.Baseline(ctx, r.ev.Repo, in.ModelName, test, ref)
			if err != nil {
				// The evaluation stands without it: warn, compare nothing.
				r.warn("report server unavailable", "baseline of %s from %s: %v", test, in.ServerURL, err)
				continue
			}
			out[i] = b
		}
	case strings.HasPrefix(in.Baseline, baselineRevision):
		rev := strings.TrimPrefix(in.Baseline, baselineRevision)
		if isLocal(in.Model) {
			return nil, fmt.Errorf("baseline %s: scoring another revision needs a hub model, not the local %s", in.Baseline, in.Model)
		}
		for i, test := range tests {
			b, err := r.revisionBaseline(ctx, rev, test)
			if err != nil {
				return nil, err
			}
			out[i] = b
		}
	default:
		return runsByTest("baseline", in.Baseline, tests, runfile.ReadFile)
	}
	return out, nil
}

// runsByTest reads the runs a comma-separated list names (the baseline's
// or the anchor's), one per test, and returns them in tests' order, nil
// where none was named.
func runsByTest(what, list string, tests []string, read func(string) (*runfile.Run, error)) ([]*runfile.Run, error) {
	byTest := map[string]*runfile.Run{}
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		run, err := read(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if prev, dup := byTest[run.Header.Test]; dup {
			return nil, fmt.Errorf("%s: %s and run %s are both %s runs; give one per test", what, p, prev.Header.ID, run.Header.Test)
		}
		byTest[run.Header.Test] = run
	}
	out := make([]*runfile.Run, len(tests))
	for i, test := range tests {
		out[i] = byTest[test]
	}
	return out, nil
}

// revisionBaseline scores the model at another revision, reusing a run
// scored earlier with the same revision and settings (actions/cache keeps
// the directory between workflow runs).
func (r *actionRun) revisionBaseline(ctx context.Context, rev, test string) (*runfile.Run, error) {
	in := r.in
	key := baselineKey(in, rev, test, ggufspec.EngineVersion(), release.Build())
	path := filepath.Join(in.CacheDir, "baselines", key+".jsonl")
	if run, err := runfile.ReadFile(path); err == nil {
		r.a.Infof("baseline %s@%s %s: cached run %s", in.Model, rev, test, path)
		return run, nil
	}
	m, err := r.model(ctx, rev)
	if err != nil {
		return nil, fmt.Errorf("baseline %s@%s: %w", in.Model, rev, err)
	}
	tmp := path + ".partial"
	// The baseline belongs to the base branch, not to this PR's commit.
	run, err := r.score(ctx, test, m, tmp, runfile.Git{Repo: r.ev.Repo, Ref: r.ev.BaseRef}, nil)
	if err != nil {
		return nil, fmt.Errorf("baseline %s@%s: %w", in.Model, rev, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	return run, nil
}

// baselineKey names a cached baseline run by everything that decides its
// scores: how the model at rev is fetched (subfolder, dtype, a tokenizer
// allowed unverified), the request it is scored with (scoreRequest: the
// settings its header records; threads aside, which never change a
// score), the training data scanned for contamination, the engine and
// udgam-ci's own build (release.Build): a fix that changes scores is never
// compared with a baseline the code before it scored.
func baselineKey(in Inputs, rev, test, engine, build string) string {
	req := in.scoreRequest(test)
	req.Threads = 0
	b, _ := json.Marshal(struct {
		Model, Rev, Subfolder, Dtype string
		AllowUnverifiedTokenizer     bool
		Request                      ScoreRequest
		TrainingData                 []string
		Engine, Build                string
	}{in.Model, rev, in.Subfolder, in.Dtype, in.AllowUnverifiedTokenizer, req, in.TrainingData, engine, build})
	sum := sha256.Sum256(b)
	return test + "-" + hex.EncodeToString(sum[:8])
}

// scoreRequest is what every run of test is scored with, from the inputs:
// its data, variants and settings (r.score adds the model and where the
// run goes).
func (in *Inputs) scoreRequest(test string) ScoreRequest {
	data := in.FreshData
	if test == runfile.TestProbes {
		data = in.ProbeItems
	}
	return ScoreRequest{Test: test, Data: data, Variants: in.ProbeVariants, Settings: in.settings()}
}

// upload sends every head run; a failing server costs the links, never the
// evaluation.
func (r *actionRun) upload(ctx context.Context, heads []*runfile.Run) ([]report.Link, []string) {
	var links []report.Link
	var flags []string
	baseRef := r.ev.BaseRef
	if r.ev.IsBaselinePush() {
		baseRef = r.ev.Ref
	}
	for _, h := range heads {
		up, err := r.srv.Upload(ctx, h, baseRef)
		if err != nil {
			r.warn("report server unavailable", "upload of %s run %s to %s failed; the run file stays in %s: %v",
				h.Header.Test, h.Header.ID, r.in.ServerURL, r.in.WorkDir, err)
			continue
		}
		r.a.Infof("uploaded %s run %s: %s", h.Header.Test, h.Header.ID, up.URL)
		links = append(links, report.Link{Text: h.Header.Test + " run", URL: up.URL})
		if len(up.Flags) > 0 {
			flags = append(flags, fmt.Sprintf("%s: the server's baseline has other settings: %s", h.Header.Test, runfile.FormatDiffs(up.Flags)))
		}
	}
	return links, flags
}

func (r *actionRun) comment(ctx context.Context, c report.Comment) *CommentResult {
	if r.in.GitHubToken == "" {
		r.warn("no PR comment", "no github-token: the comparison is in the job summary only")
		return nil
	}
	var body strings.Builder
	if err := report.RenderComment(&body, c); err != nil {
		r.warn("no PR comment", "render comment: %v", err)
		return nil
	}
	body.WriteString(r.auditSection())
	gh, err := NewGitHubClient(r.ev.APIURL, r.in.GitHubToken, r.d.GitHub)
	if err != nil {
		r.warn("no PR comment", "%v", err)
		return nil
	}
	res, err := UpsertComment(ctx, gh, r.ev.Repo, r.ev.PR, report.Marker(r.in.ModelName), body.String())
	if err != nil {
		// Fork PRs get a read-only token: say how to fix it, keep the result.
		r.warn("no PR comment", "%v (a pull request from a fork gets a read-only token: see the pull_request_target / workflow_run example)", err)
		return nil
	}
	verb := "edited"
	switch {
	case res.Created:
		verb = "created"
	case res.Unchanged:
		verb = "left unchanged"
	}
	r.a.Infof("%s PR comment %d: %s", verb, res.ID, res.URL)
	return &res
}

func (r *actionRun) warn(title, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.a.WithFieldsMap(map[string]string{"title": "udgam-ci: " + title}).Warningf("%s", oneLine(msg))
	r.notes = append(r.notes, msg)
}

func (r *actionRun) summary(md string) {
	if r.d.Getenv("GITHUB_STEP_SUMMARY") == "" {
		r.a.Infof("%s", md)
		return
	}
	r.a.AddStepSummary(md)
}

// oneLine keeps an annotation on one line: GitHub shows only the first.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func isLocal(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
