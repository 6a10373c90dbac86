package action

import (
	"context"
	"io"
	"net/http"

	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/contamination"
	"github.com/udgamlabs/udgam-ci/fetch"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Settings are the inputs that decide how a model is scored, carried alike
// by every request that scores (a test's run, the artifact audit).
type Settings struct {
	AddBOS  string
	Window  int
	Stride  int
	Threads int
	GPU     string
}

// settings are the inputs' scoring settings.
func (in *Inputs) settings() Settings {
	return Settings{AddBOS: in.AddBOS, Window: in.Window, Stride: in.Stride, Threads: in.Threads, GPU: in.GPU}
}

// ScoreRequest asks for one test's run of one model.
type ScoreRequest struct {
	Test     string // runfile.TestFresh or runfile.TestProbes
	Model    string // GGUF path
	Out      string // run file to write
	Data     string // --data or --items; "" for the default data
	Variants string // probes: --variants
	Settings
	ModelName     string
	ModelRevision string
	Git           runfile.Git
	// Contamination is a scan report whose findings the run header records.
	Contamination string
	// Sequential, when set, scores the set in the seeded order and stops
	// once the comparison with its baseline decides (--until decided).
	Sequential *SequentialRequest
}

// SequentialRequest is --until decided: the baseline run (the whole set),
// the budget and the smallest delta that matters (0: none).
type SequentialRequest struct {
	Baseline  *runfile.Run
	Budget    string
	MinEffect float64
}

// ScanRequest asks for a contamination scan of training data against the
// test sets the Action scores.
type ScanRequest struct {
	Train      []string
	Tests      []string
	FreshData  string
	ProbeItems string
	Out        string // report to write
}

// Scorer runs a test and returns the run it wrote to req.Out. The command
// wires the real scorers; tests inject fakes.
type Scorer interface {
	Score(ctx context.Context, req ScoreRequest) (*runfile.Run, error)
}

// Uploaded is the server's answer to one upload.
type Uploaded struct {
	URL        string
	CompareURL string
	// Flags are the judged settings that differ from the server's baseline.
	Flags []runfile.Diff
}

// Server is the report server as the action uses it.
type Server interface {
	// Upload stores a run; baseRef is the branch whose latest run is the
	// baseline the server checks the settings against.
	Upload(ctx context.Context, run *runfile.Run, baseRef string) (Uploaded, error)
	// Baseline returns the latest run of model's test on ref of repo, or
	// nil and no error when there is none.
	Baseline(ctx context.Context, repo, model, test, ref string) (*runfile.Run, error)
	// Anchor returns the run of model's test pinned as repo's anchor, or
	// nil and no error when none is.
	Anchor(ctx context.Context, repo, model, test string) (*runfile.Run, error)
	// Run returns a stored run with its records.
	Run(ctx context.Context, id string) (*runfile.Run, error)
	// UploadAudit stores an artifact audit beside the runs of its commit.
	// dir holds the four run files it was judged from (the server
	// recomputes it from them).
	UploadAudit(ctx context.Context, rep *audit.Report, dir string) (Uploaded, error)
}

// Deps are the action's connections to the world, injected so the whole
// action runs in tests against fake servers.
type Deps struct {
	Getenv func(string) string
	Out    io.Writer // the step's log: workflow commands and progress

	// GitHub carries GitHub API requests (http.DefaultTransport when nil).
	GitHub http.RoundTripper
	// Hub returns the hub client that keeps its downloads under cacheDir.
	Hub func(cacheDir string) fetch.Hub
	// Scorer scores the tests.
	Scorer Scorer
	// Scan runs a contamination scan (the training-data input); nil
	// refuses that input.
	Scan func(ctx context.Context, req ScanRequest) (*contamination.Report, error)
	// Server connects to a report server; nil disables uploads and the
	// server baseline.
	Server func(url, token string) Server
	// Audit audits an artifact against the scored model (the artifact
	// input); nil refuses that input.
	Audit func(ctx context.Context, req AuditRequest) (*audit.Report, error)
}
