package action_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/action/actiontest"
	"github.com/udgamlabs/udgam-ci/ggufspec"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// policyBase is the pull requests' base commit, where the policy is read.
const policyBase = "3333333333333333333333333333333333333333"

const acceptLabel = "udgam-ci/accept-looser-gate"

// policyPayload is a pull_request event whose base is policyBase.
func policyPayload(pr int) string {
	return fmt.Sprintf(`{"number":%d,"pull_request":{"number":%[1]d,"head":{"ref":"feat/x","sha":"%s"},"base":{"ref":"main","sha":%q}},
		"repository":{"full_name":%q,"default_branch":"main"}}`, pr, strings.Repeat("9", 40), policyBase, repo)
}

// basePolicy is the base's gate; each case changes one setting of it.
func basePolicy() map[string]string {
	return map[string]string{
		"fail-on": "regression", "min-effect-bpb": "0.002", "min-effect-accuracy": "1", "tests": "fresh,probes",
		"fresh-data": "", "probe-items": "", "baseline": "revision:" + baseSHA, "until": "all", "budget": "45m",
		"accept-label": acceptLabel,
	}
}

func policyFile(p map[string]string) string {
	var b strings.Builder
	b.WriteString("# the gate of acme/train's pull requests\n")
	for _, k := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "%s: %q\n", k, p[k])
	}
	return b.String()
}

// prInputs are a pull request's inputs equal to the policy's gate.
func prInputs(p map[string]string) map[string]string {
	in := map[string]string{"model": model, "revision": headSHA}
	for k, v := range p {
		if k != "accept-label" && k != "accept-roles" {
			in[k] = v
		}
	}
	return in
}

// since returns the scorer's data lines and sequential requests of the
// calls after the first n.
func (s *fakeScorer) since(n int) ([]string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var seqs []string
	for _, q := range s.seqs[n:] {
		if q == nil {
			seqs = append(seqs, "all")
		} else {
			seqs = append(seqs, "decided budget "+q.Budget)
		}
	}
	return slices.Clone(s.data[n:]), seqs
}

func (s *fakeScorer) n() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// policyCase is one setting a pull request loosens: judged must hold of
// a run judged by the base's value, own of one judged by the pull
// request's (accepted by a maintainer's label).
type policyCase struct {
	setting, value string
	base           map[string]string // changes to basePolicy
	judged, own    func(t *testing.T, o outcome, data, seqs []string)
}

func exit(want int) func(t *testing.T, o outcome, data, seqs []string) {
	return func(t *testing.T, o outcome, data, seqs []string) {
		t.Helper()
		if o.res.ExitCode != want {
			t.Errorf("exit %d, want %d\n%s", o.res.ExitCode, want, o.log)
		}
	}
}

// verdictIs checks a test's verdict, and the exit code unless it is -1.
func verdictIs(test, want string, code int) func(t *testing.T, o outcome, data, seqs []string) {
	return func(t *testing.T, o outcome, data, seqs []string) {
		t.Helper()
		if got := o.outputs[test+"-verdict"]; got != want || code >= 0 && o.res.ExitCode != code {
			t.Errorf("%s %q, exit %d; want %q, exit %d", test, got, o.res.ExitCode, want, code)
		}
	}
}

func scoredWith(want ...string) func(t *testing.T, o outcome, data, seqs []string) {
	return func(t *testing.T, o outcome, data, seqs []string) {
		t.Helper()
		for _, w := range want {
			if !slices.Contains(data, w) && !slices.Contains(seqs, w) {
				t.Errorf("no call scored with %q: data %q, until %q", w, data, seqs)
			}
		}
	}
}

// TestActionPolicyRefusesLooserSettings: for each setting of the gate, a
// pull request that loosens it is judged by the base's policy, and the
// comment, the Check run and the job summary name the change; once a
// maintainer applies the policy's label, the looser setting applies and
// is named beside the label and who applied it.
func TestActionPolicyRefusesLooserSettings(t *testing.T) {
	t.Parallel()
	easy := "hf://acme/easy@" + strings.Repeat("5", 40)
	// The base's anchor is main's checkpoint (0.95 bits per byte); the
	// head (1.00) is 0.05 beyond it, past a 0.01 budget. An easier anchor
	// is the head's own score.
	dir := t.TempDir()
	anchorFile := func(name string, score float64) string {
		p := filepath.Join(dir, name+".jsonl")
		run := servertest.Spec{ID: name, Test: "fresh", Model: model, Revision: baseSHA, Repo: repo, Records: 140, Score: score, Seed: 7,
			Engine: ggufspec.EngineVersion(), Window: 2048}.Run()
		if err := runfile.WriteFile(p, run); err != nil {
			t.Fatal(err)
		}
		return p
	}
	anchored := map[string]string{"anchor": anchorFile("fresh-release", 0.95), "max-drift-bpb": "0.01"}
	drifts := func(want int) func(t *testing.T, o outcome, _, _ []string) {
		return func(t *testing.T, o outcome, _, _ []string) {
			if len(o.res.Anchors) != 1 || len(o.res.Drifts) != want {
				t.Errorf("%d comparisons with the anchor, %d beyond the drift budget; want 1, %d\n%s", len(o.res.Anchors), len(o.res.Drifts), want, o.log)
			}
		}
	}
	cases := []policyCase{
		{setting: "fail-on", value: "never", judged: exit(1), own: exit(0)},
		{setting: "min-effect-bpb", value: "0.1", judged: verdictIs("fresh", "regressed", 1), own: verdictIs("fresh", "no change", -1)},
		{setting: "min-effect-accuracy", value: "20", judged: verdictIs("probes", "regressed", 1), own: verdictIs("probes", "no change", -1)},
		{setting: "tests", value: "fresh", judged: func(t *testing.T, o outcome, _, _ []string) {
			if len(o.res.Heads) != 2 || o.res.ExitCode != 1 {
				t.Errorf("%d tests scored, exit %d; want both, probes regressed", len(o.res.Heads), o.res.ExitCode)
			}
		}, own: func(t *testing.T, o outcome, _, _ []string) {
			if len(o.res.Heads) != 1 || o.res.Heads[0].Header.Test != "fresh" {
				t.Errorf("%d tests scored; want fresh alone", len(o.res.Heads))
			}
		}},
		{setting: "fresh-data", value: easy, judged: scoredWith("fresh@" + headSHA + " "), own: scoredWith("fresh@" + headSHA + " " + easy)},
		{setting: "probe-items", value: easy, judged: scoredWith("probes@" + headSHA + " "), own: scoredWith("probes@" + headSHA + " " + easy)},
		{setting: "baseline", value: "none", judged: func(t *testing.T, o outcome, _, _ []string) {
			if len(o.res.Comparisons) != 2 || o.res.ExitCode != 1 {
				t.Errorf("%d comparisons, exit %d; want the base's baseline", len(o.res.Comparisons), o.res.ExitCode)
			}
		}, own: func(t *testing.T, o outcome, _, _ []string) {
			if len(o.res.Comparisons) != 0 {
				t.Errorf("%d comparisons; want none", len(o.res.Comparisons))
			}
		}},
		{setting: "until", value: "decided", judged: func(t *testing.T, o outcome, _, seqs []string) {
			if len(seqs) == 0 || slices.ContainsFunc(seqs, func(s string) bool { return s != "all" }) {
				t.Errorf("head runs %q; want every record scored (until: all)", seqs)
			}
		}, own: scoredWith("decided budget 45m")},
		{setting: "budget", value: "1m", base: map[string]string{"until": "decided"},
			judged: scoredWith("decided budget 45m"), own: scoredWith("decided budget 1m")},
		{setting: "max-drift-bpb", value: "0.1", base: anchored, judged: drifts(1), own: drifts(0)},
		{setting: "anchor", value: anchorFile("fresh-easy", 1.00), base: anchored, judged: drifts(1), own: drifts(0)},
	}
	for _, tc := range cases {
		t.Run(tc.setting, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.scorer.scores[headSHA] = map[string]float64{"fresh": 1.00, "probes": 30} // both worse
			pol := basePolicy()
			maps.Copy(pol, tc.base)
			w.gh.SetFile(policyBase, ".github/udgam-ci.yml", policyFile(pol))
			in := prInputs(pol)
			in[tc.setting] = tc.value
			change := fmt.Sprintf("%s `%s` (base: %s)", tc.setting, tc.value, orEmpty(pol[tc.setting]))

			n := w.scorer.n()
			o := w.run("pull_request", policyPayload(21), in)
			if o.err != nil {
				t.Fatalf("%v\n%s", o.err, o.log)
			}
			data, seqs := w.scorer.since(n)
			tc.judged(t, o, data, seqs)
			body := commentBody(t, w.gh, 21)
			for _, want := range []string{"**Gate:** the base's policy, `.github/udgam-ci.yml` at `3333333`.",
				"> [!CAUTION]\n> This pull request tried to loosen the gate; the base's settings apply instead: " + change + ".",
				"> A maintainer (admin, maintain) can accept them with the label `" + acceptLabel + "`."} {
				if !strings.Contains(body, want) || !strings.Contains(o.summary, want) {
					t.Errorf("the comment or the job summary lacks %q:\n%s", want, body)
				}
			}
			if tc.setting == "fail-on" {
				golden(t, "comment_policy_refused.md", body)
			}
			c := w.gh.Checks()[0]
			if !strings.Contains(c.Output.Title, "looser gate refused") || !strings.Contains(c.Output.Summary, change) ||
				!hasAnnotation(c, "udgam-ci: looser gate refused", strings.ReplaceAll(change, "`", "")) {
				t.Errorf("the Check run does not name the refused change %q: %+v", change, c)
			}

			// A maintainer accepts the looser setting.
			w.gh.SetRole("alice", "maintain")
			w.gh.Label(21, acceptLabel, "alice")
			n = w.scorer.n()
			o = w.run("pull_request", policyPayload(21), in)
			if o.err != nil {
				t.Fatalf("%v\n%s", o.err, o.log)
			}
			data, seqs = w.scorer.since(n)
			tc.own(t, o, data, seqs)
			want := "> [!WARNING]\n> Looser than the base's policy, accepted by the label `" + acceptLabel + "` applied by `@alice` (role `maintain`): " + change + "."
			if body := o.summary; !strings.Contains(body, want) {
				t.Errorf("the job summary lacks %q:\n%s", want, body)
			}
			// Compared with nothing (baseline: none), the comment is left
			// as it was; the job summary and the Check run say it.
			if cs := ourComments(w.gh, 21); len(o.res.Comparisons) > 0 && !strings.Contains(cs[0].Body, want) {
				t.Errorf("the comment lacks %q:\n%s", want, cs[0].Body)
			}
			if c := w.gh.Checks()[0]; !strings.Contains(c.Output.Title, "looser gate accepted by label "+acceptLabel) {
				t.Errorf("Check run title %q", c.Output.Title)
			}
		})
	}
}

func orEmpty(v string) string {
	if v == "" {
		return "(empty)"
	}
	return "`" + v + "`"
}

func commentBody(t *testing.T, gh *actiontest.GitHub, pr int) string {
	t.Helper()
	cs := ourComments(gh, pr)
	if len(cs) != 1 {
		t.Fatalf("PR %d has %d udgam-ci comments, want 1", pr, len(cs))
	}
	return cs[0].Body
}

func hasAnnotation(c actiontest.CheckRun, title, msg string) bool {
	return slices.ContainsFunc(c.Annotations, func(a actiontest.CheckAnnotation) bool {
		return a.Title == title && strings.Contains(a.Message, msg)
	})
}

// neverWorld is a pull request whose probes regress and that sets
// fail-on: never against the base's policy, with alice an admin.
func neverWorld(t *testing.T) (*world, map[string]string, map[string]string) {
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.95, "probes": 30}
	pol := basePolicy()
	w.gh.SetFile(policyBase, ".github/udgam-ci.yml", policyFile(pol))
	in := prInputs(pol)
	in["fail-on"] = "never"
	w.gh.SetRole("alice", "admin")
	return w, pol, in
}

// The label counts only when someone whose role the policy names applied
// it, and only while it is on the pull request.
func TestActionPolicyLabelNeedsAMaintainer(t *testing.T) {
	t.Parallel()
	w, pol, in := neverWorld(t)
	w.gh.SetRole("bob", "write")

	steps := []struct {
		do     func()
		exit   int
		saying string
	}{
		{func() { w.gh.Label(22, acceptLabel, "bob") }, 1,
			"> The label `" + acceptLabel + "` was applied by `@bob` (role `write`), who is not one of admin, maintain: ignored."},
		{func() { w.gh.Label(22, acceptLabel, "mallory") }, 1, // no collaborator at all
			"> The label `" + acceptLabel + "` was applied by `@mallory` (role `none`), who is not one of admin, maintain: ignored."},
		{func() { w.gh.Label(22, "other", "alice"); w.gh.Label(22, acceptLabel, "alice") }, 0,
			"accepted by the label `" + acceptLabel + "` applied by `@alice` (role `admin`): fail-on `never` (base: `regression`)."},
		{func() { w.gh.Unlabel(22, acceptLabel, "bob") }, 1,
			"> A maintainer (admin, maintain) can accept them with the label `" + acceptLabel + "`."},
	}
	w.gh.PerPage = 2 // the events take pages
	for i, s := range steps {
		s.do()
		o := w.run("pull_request", policyPayload(22), in)
		if o.err != nil {
			t.Fatalf("step %d: %v\n%s", i, o.err, o.log)
		}
		if o.res.ExitCode != s.exit {
			t.Errorf("step %d: exit %d, want %d", i, o.res.ExitCode, s.exit)
		}
		if body := commentBody(t, w.gh, 22); !strings.Contains(body, s.saying) {
			t.Errorf("step %d: the comment lacks %q:\n%s", i, s.saying, body)
		}
	}
	var pages int
	for _, l := range w.gh.Log() {
		if strings.Contains(l, "/issues/22/events") && strings.Contains(l, "page=") {
			pages++
		}
	}
	if pages == 0 {
		t.Error("the events' later pages were never read")
	}

	// A policy may let write access accept.
	pol["accept-roles"] = "admin, maintain, write"
	w.gh.SetFile(policyBase, ".github/udgam-ci.yml", policyFile(pol))
	w.gh.Label(22, acceptLabel, "bob")
	if o := w.run("pull_request", policyPayload(22), in); o.err != nil || o.res.ExitCode != 0 {
		t.Errorf("write accepted by the policy: err %v, exit %d", o.err, o.res.ExitCode)
	}
}

// A stricter pull request applies its own settings, and the comment says
// which.
func TestActionPolicyStricterApplies(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.90, "probes": 60}
	pol := basePolicy()
	pol["until"] = "decided"
	w.gh.SetFile(policyBase, ".github/udgam-ci.yml", policyFile(pol))
	in := prInputs(pol)
	in["until"], in["min-effect-bpb"] = "all", "0.001"
	n := w.scorer.n()
	o := w.run("pull_request", policyPayload(23), in)
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("err %v, exit %d\n%s", o.err, o.res.ExitCode, o.log)
	}
	if _, seqs := w.scorer.since(n); slices.ContainsFunc(seqs, func(s string) bool { return s != "all" }) {
		t.Errorf("head runs %q; want the pull request's until: all", seqs)
	}
	body := commentBody(t, w.gh, 23)
	want := "**Gate:** the base's policy, `.github/udgam-ci.yml` at `3333333`. Stricter here, so applied: min-effect-bpb `0.001` (base: `0.002`); until `all` (base: `decided`)."
	if !strings.Contains(body, want) || strings.Contains(body, "[!CAUTION]") {
		t.Errorf("comment:\n%s\nwant %q", body, want)
	}
	if c := w.gh.Checks()[0]; c.Output.Title != "This job passes (fail-on: regression)." {
		t.Errorf("Check run title %q", c.Output.Title)
	}
}

// With no policy at the base the gate is the pull request's own, as
// before, and the comment says so; a pull request cannot escape the
// policy by naming a file the base does not have.
func TestActionPolicyAbsentOrEscaped(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.95, "probes": 30}
	in := prInputs(basePolicy())
	in["fail-on"] = "never"
	o := w.run("pull_request", policyPayload(24), in)
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("no policy: err %v, exit %d\n%s", o.err, o.res.ExitCode, o.log)
	}
	want := "**Gate:** this pull request's own settings; the base (`3333333`) has no policy file `.github/udgam-ci.yml`."
	if body := commentBody(t, w.gh, 24); !strings.Contains(body, want) {
		t.Errorf("comment lacks %q:\n%s", want, body)
	}
	if !slices.Contains(w.gh.Log(), "GET /api/v3/repos/"+repo+"/contents/.github/udgam-ci.yml?ref="+policyBase) {
		t.Errorf("the policy was not looked for at the base commit: %v", w.gh.Log())
	}

	w.gh.SetFile(policyBase, ".github/udgam-ci.yml", policyFile(basePolicy()))
	in["policy"] = ".github/lenient.yml"
	o = w.run("pull_request", policyPayload(24), in)
	if o.err != nil || o.res.ExitCode != 1 {
		t.Fatalf("escaped policy: err %v, exit %d\n%s", o.err, o.res.ExitCode, o.log)
	}
	want = "This pull request names the policy `.github/lenient.yml`, which the base does not have."
	if body := commentBody(t, w.gh, 24); !strings.Contains(body, want) || !strings.Contains(body, "fail-on `never` (base: `regression`)") {
		t.Errorf("comment lacks %q:\n%s", want, body)
	}

	// Without a token nothing can be read: the gate is the pull
	// request's own and the job summary says why (branch protection
	// requiring the Check run, which needs the token, still holds).
	in["github-token"] = ""
	delete(in, "policy")
	o = w.run("pull_request", policyPayload(25), in)
	if o.err != nil || o.res.ExitCode != 0 || !strings.Contains(o.summary, "without `github-token` the base's policy `.github/udgam-ci.yml` could not be read") {
		t.Errorf("no token: err %v, exit %d, summary:\n%s", o.err, o.res.ExitCode, o.summary)
	}
}

// A policy that exists but cannot be parsed fails the run before it
// scores anything: falling back to the pull request's own settings would
// let a pull request loosen its gate by breaking the file.
func TestActionPolicyFailsClosed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.90, "probes": 60}
	w.gh.SetFile(policyBase, ".github/udgam-ci.yml", "fail-on: regression\nmin-effect-bpp: 0.5\n")
	o := w.run("pull_request", policyPayload(26), prInputs(basePolicy()))
	if o.err == nil || o.res.ExitCode != 1 {
		t.Fatalf("err %v, exit %d", o.err, o.res.ExitCode)
	}
	if !strings.Contains(o.log, "::error title=udgam-ci%3A evaluation failed::the gate's policy at the base "+policyBase+": policy .github/udgam-ci.yml:2: unknown setting \"min-effect-bpp\"") {
		t.Errorf("log:\n%s", o.log)
	}
	if w.scorer.n() != 0 || len(ourComments(w.gh, 26)) != 0 {
		t.Errorf("scored %d runs and commented under a policy it could not read", w.scorer.n())
	}

	// A policy path the API answers with something else than a file.
	in := prInputs(basePolicy())
	in["policy"] = ".github"
	o = w.run("pull_request", policyPayload(26), in)
	if o.err == nil || !strings.Contains(o.err.Error(), "read the gate's policy .github at the base "+policyBase+": .github is not a file") {
		t.Errorf("a directory as the policy: err %v", o.err)
	}
}

// A pull request cannot borrow the label of another by naming it in the
// pr input: the event's own number counts.
func TestActionPolicyLabelOfAnotherPullRequest(t *testing.T) {
	t.Parallel()
	w, _, in := neverWorld(t)
	w.gh.Label(12, acceptLabel, "alice")
	in["pr"] = "12"
	o := w.run("pull_request", policyPayload(27), in)
	if o.err != nil || o.res.ExitCode != 1 {
		t.Fatalf("err %v, exit %d: want the base's fail-on\n%s", o.err, o.res.ExitCode, o.log)
	}
	if len(ourComments(w.gh, 12)) != 0 || !strings.Contains(commentBody(t, w.gh, 27), "can accept them with the label") {
		t.Errorf("commented on #12, or #27's comment does not say the label is missing")
	}
}
