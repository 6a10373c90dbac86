package action

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/sethvargo/go-githubactions"
	"github.com/udgamlabs/udgam-ci/action/failon"
	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/fetch"
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

// actionRun is the job's environment: the connections, the Action's
// writer, the inputs, the event and the clients, set by Run before any
// stage (the base's policy applied to the inputs by run() first), and the
// warnings warn collects for the summary. What a stage finds it returns.
type actionRun struct {
	d     Deps
	a     *githubactions.Action
	in    Inputs
	ev    Event
	srv   Server
	hub   fetch.Hub
	notes []string // warnings also shown in the summary
}

// job is what the stages found beside the Result, for the comment, the
// Check run and the gate.
type job struct {
	gate  *gateState              // the base's policy on a pull request; nil on a push
	scan  scanned                 // the training-data scan
	bases map[string]*runfile.Run // by test, for the comparisons made
	audit *audit.Report           // the artifact audit; nil without one
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
	gate, eff, err := r.applyPolicy(ctx)
	if err != nil {
		return res, err
	}
	// Every stage after this one reads the settings the run is judged by.
	r.in.setGate(eff)
	j := job{gate: gate}
	if j.scan, err = r.scan(ctx); err != nil {
		return res, err
	}
	// A push to the base branch records the baseline: it scores every
	// record and compares nothing. A pull request scored until decided
	// needs its baselines first.
	compares := !r.ev.IsBaselinePush() && r.in.Baseline != BaselineNone
	reachable := !(r.in.Baseline == BaselineServer && r.srv == nil) // else compare says why not
	var early map[string]*runfile.Run
	if compares && reachable && r.in.Until == UntilDecided {
		if early, err = r.prefetchBaselines(ctx, j.scan.path); err != nil {
			return res, err
		}
	}
	heads, err := r.scoreHeads(ctx, j.scan.path, early)
	res.Heads, res.HeadFiles = heads.runs, heads.files
	if err != nil {
		return res, err
	}
	if j.audit, err = r.audit(ctx, heads.model); err != nil {
		return res, err
	}
	if compares {
		if j.bases, err = r.compare(ctx, &res, j.scan.path, early); err != nil {
			return res, err
		}
	}
	if !r.ev.IsBaselinePush() {
		if err := r.compareAnchors(ctx, &res); err != nil {
			return res, err
		}
	}
	res.Regressions, res.Drifts = failon.Family(res.Comparisons, res.Anchors)
	var links []report.Link
	var flags []string
	if r.srv != nil {
		r.a.Group("Upload to " + r.in.ServerURL)
		links, flags = r.upload(ctx, res.Heads)
		links = append(links, r.uploadAudit(ctx, j.audit)...)
		r.a.EndGroup()
		if len(flags) > 0 {
			res.Mismatch = true
		}
	}
	if err := r.publish(ctx, &res, j, links, flags); err != nil {
		return res, err
	}
	r.outputs(res, links)
	res.ExitCode = r.gate(res, j)
	return res, nil
}

// oneLine keeps an annotation on one line: GitHub shows only the first.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func isLocal(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
