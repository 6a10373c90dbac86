// Package action is udgam-ci's GitHub Action: it reads the step's inputs and
// the triggering event, fetches and scores the model, compares it with a
// baseline, keeps one PR comment per model up to date, writes outputs and the
// job summary, and decides the exit code by fail-on.
package action

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sethvargo/go-githubactions"
	"github.com/udgamlabs/udgam-ci/action/failon"
	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Inputs are the step's `with:` values, validated.
type Inputs struct {
	Model         string // hub id OWNER/NAME, a .gguf path or a safetensors directory
	ModelName     string // display name; defaults to Model
	Revision      string // commit sha of a hub model
	Subfolder     string // the checkpoint's directory in the repository (or local directory)
	AllowUnpinned bool   // accept a branch or tag for Revision
	// AllowUnverifiedTokenizer converts a tokenizer whose equality with the
	// Hugging Face tokenizer is not established; runs say so.
	AllowUnverifiedTokenizer bool
	Baseline                 string   // "server", "revision:SHA", "none" or run files separated by commas
	Tests                    []string // fresh, probes
	FreshData                string
	ProbeItems               string
	ProbeVariants            string // prompt variants scored besides the published template: "", "all" or names
	Dtype                    string
	AddBOS                   string
	Window                   int
	Stride                   int
	Threads                  int
	GPU                      string
	ServerURL                string
	ServerToken              string
	GitHubToken              string
	Comment                  bool
	FailOn                   string
	MinEffectBPB             float64
	MinEffectAcc             float64
	// Anchor names the model's anchor run per test: "server" (the run
	// pinned on the report server), run files, or run ids on the report
	// server, separated by commas; "" compares with no anchor.
	Anchor string
	// MaxDriftBPB and MaxDriftAcc are the drift budget: the largest
	// change since the anchor the gate lets through; 0 for none (the
	// change is shown, never judged).
	MaxDriftBPB float64
	MaxDriftAcc float64
	WorkDir     string // where run files are written
	CacheDir    string // models and cached baseline runs
	Resamples   int
	PR          int // overrides the event's PR (workflow_run of a fork's PR names none)
	// Until is "all" or "decided" (the default): a pull request's runs
	// stop once their anytime-valid comparison with the baseline decides,
	// or at Budget; a push to the base branch scores every record.
	Until  string
	Budget string
	// TrainingData is scanned for the test items before scoring: paths,
	// folders, globs or hf:// datasets at a pinned commit.
	TrainingData []string
	// Artifact is audited against the scored model (evals/audit): a .gguf
	// path, an hf:// GGUF at a commit, or a quantization type.
	Artifact       string
	MaxDegradation audit.Limits
	// Policy is the policy file read at a pull request's base commit
	// (policy.go): the gate's settings there outrank looser inputs.
	Policy string
}

// input describes one action.yml input: the reader and action.yml must agree
// (a test checks it), so the names live in one list.
type input struct {
	name string
	def  string
}

// inputList is every input `udgam-ci action` reads, with the default it
// applies when the input is empty (action.yml repeats these).
var inputList = []input{
	{"model", ""},
	{"model-name", ""},
	{"revision", ""},
	{"subfolder", ""},
	{"allow-unpinned", "false"},
	{"allow-unverified-tokenizer", "false"},
	{"baseline", "server"},
	{"tests", "fresh,probes"},
	{"fresh-data", ""},
	{"probe-items", ""},
	{"probe-variants", ""},
	{"dtype", convert.DefaultDtype},
	{"add-bos", evals.BOSAuto},
	{"window", strconv.Itoa(fresh.DefaultWindow)},
	{"stride", strconv.Itoa(fresh.DefaultStride)},
	{"threads", "0"},
	{"gpu", "auto"},
	{"server-url", ""},
	{"server-token", ""},
	{"github-token", ""},
	{"comment", "true"},
	{"fail-on", failon.Default},
	{"min-effect-bpb", strconv.FormatFloat(compare.DefaultMinEffect(runfile.TestFresh), 'g', -1, 64)},
	{"min-effect-accuracy", strconv.FormatFloat(compare.DefaultMinEffect(runfile.TestProbes), 'g', -1, 64)},
	{"anchor", ""},
	{"max-drift-bpb", strconv.FormatFloat(compare.DefaultMaxDriftBPB, 'g', -1, 64)},
	{"max-drift-accuracy", strconv.FormatFloat(compare.DefaultMaxDriftAccuracy, 'g', -1, 64)},
	{"work-dir", "udgam-ci-runs"},
	{"cache-dir", ""},
	{"resamples", strconv.Itoa(compare.DefaultResamples)},
	{"pr", "0"},
	{"training-data", ""},
	{"until", UntilDecided},
	{"budget", DefaultBudget},
	{"artifact", ""},
	{"max-degradation", audit.DefaultLimits.String()},
	{"policy", DefaultPolicyPath},
}

// InputNames lists the inputs `udgam-ci action` reads, in action.yml order.
func InputNames() []string {
	names := make([]string, len(inputList))
	for i, in := range inputList {
		names[i] = in.name
	}
	return names
}

// InputDefault is the default applied to an empty input.
func InputDefault(name string) string {
	for _, in := range inputList {
		if in.name == name {
			return in.def
		}
	}
	return ""
}

var (
	validDtypes    = convert.Dtypes
	validAddBOS    = evals.BOSModes
	validGPU       = []string{"auto", "cpu", "metal", "cuda"}
	validFailOn    = failon.Values
	validTestNames = []string{runfile.TestFresh, runfile.TestProbes}
)

// IsHubRepo reports whether model names a hub repository rather than a local
// file or directory (which must then exist; the caller checks).
func IsHubRepo(model string) bool {
	return runfile.IsHubRepo(model) && !strings.HasSuffix(model, ".gguf")
}

// InputEnv is how action.yml passes an input to `udgam-ci action`:
// INPUT_ADD_BOS for add-bos. The runner itself sets INPUT_ADD-BOS for
// JavaScript and Docker actions, but a composite action's step env needs
// names a shell accepts, so both spellings are read.
func InputEnv(name string) string {
	return "INPUT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// inputGetenv reads INPUT_ADD-BOS, falling back to INPUT_ADD_BOS.
func inputGetenv(getenv func(string) string) func(string) string {
	return func(k string) string {
		if v := getenv(k); v != "" || !strings.HasPrefix(k, "INPUT_") {
			return v
		}
		return getenv(strings.ReplaceAll(k, "-", "_"))
	}
}

// fields reads named values (the step's inputs, a policy file's keys) into
// typed settings, reporting each problem by the name it came from, so the
// two read a setting by the same rules.
type fields struct {
	get func(name string) string // the value, or its default when empty
	bad func(name, format string, args ...any)
}

func (f fields) oneOf(name string, valid []string) string {
	v := strings.ToLower(f.get(name))
	if !slices.Contains(valid, v) {
		f.bad(name, "%q is not one of %s", v, strings.Join(valid, ", "))
	}
	return v
}

func (f fields) integer(name string, min int) int {
	v := f.get(name)
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		f.bad(name, "%q is not a whole number >= %d", v, min)
	}
	return n
}

func (f fields) number(name string) float64 {
	v := f.get(name)
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || x < 0 {
		f.bad(name, "%q is not a number >= 0", v)
	}
	return x
}

func (f fields) boolean(name string) bool {
	v := f.get(name)
	b, err := strconv.ParseBool(v)
	if err != nil {
		f.bad(name, "%q is not true or false", v)
	}
	return b
}

// gate reads the settings that decide the verdict (GateSettings).
func (f fields) gate() GateSettings {
	g := GateSettings{
		FailOn:            f.oneOf("fail-on", validFailOn),
		MinEffectBPB:      f.number("min-effect-bpb"),
		MinEffectAccuracy: f.number("min-effect-accuracy"),
		FreshData:         f.get("fresh-data"),
		ProbeItems:        f.get("probe-items"),
		Baseline:          f.get("baseline"),
		Until:             f.oneOf("until", []string{UntilAll, UntilDecided}),
		Budget:            f.get("budget"),
		MaxDriftBPB:       f.number("max-drift-bpb"),
		MaxDriftAccuracy:  f.number("max-drift-accuracy"),
		Anchor:            strings.TrimSpace(f.get("anchor")),
	}
	if _, _, err := evals.ParseBudget(g.Budget); err != nil {
		f.bad("budget", "%v", err)
	}
	tests, err := parseTests(f.get("tests"))
	if err != nil {
		f.bad("tests", "%v", err)
	}
	g.Tests = tests
	if err := checkBaseline(g.Baseline); err != nil {
		f.bad("baseline", "%v", err)
	}
	return g
}

// ReadInputs reads and validates every input. All problems are reported
// together so a user fixes the workflow once.
func ReadInputs(a *githubactions.Action, isLocal func(path string) bool) (Inputs, error) {
	get := func(name string) string {
		if v := a.GetInput(name); v != "" {
			return v
		}
		return InputDefault(name)
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	f := fields{get: get, bad: func(name, format string, args ...any) { bad("input "+name+": "+format, args...) }}

	in := Inputs{
		Model:                    get("model"),
		ModelName:                get("model-name"),
		Revision:                 get("revision"),
		Subfolder:                get("subfolder"),
		AllowUnpinned:            f.boolean("allow-unpinned"),
		AllowUnverifiedTokenizer: f.boolean("allow-unverified-tokenizer"),
		ProbeVariants:            get("probe-variants"),
		Dtype:                    f.oneOf("dtype", validDtypes),
		AddBOS:                   f.oneOf("add-bos", validAddBOS),
		Window:                   f.integer("window", 1),
		Stride:                   f.integer("stride", 1),
		Threads:                  f.integer("threads", 0),
		GPU:                      f.oneOf("gpu", validGPU),
		ServerURL:                strings.TrimRight(get("server-url"), "/"),
		ServerToken:              get("server-token"),
		GitHubToken:              get("github-token"),
		Comment:                  f.boolean("comment"),
		WorkDir:                  get("work-dir"),
		CacheDir:                 get("cache-dir"),
		Resamples:                f.integer("resamples", 100),
		PR:                       f.integer("pr", 0),
		Policy:                   get("policy"),
	}
	in.setGate(f.gate())
	if in.Stride > in.Window {
		bad("input stride: %d is larger than window %d", in.Stride, in.Window)
	}
	var err error
	if in.Artifact = strings.TrimSpace(get("artifact")); in.Artifact != "" {
		if _, err := audit.ParseArtifact(in.Artifact); err != nil {
			bad("input artifact: %v", err)
		}
	}
	if in.MaxDegradation, err = audit.ParseLimits(get("max-degradation")); err != nil {
		bad("input max-degradation: %v", err)
	}
	for _, t := range strings.FieldsFunc(get("training-data"), func(r rune) bool { return r == ',' || r == '\n' }) {
		if t = strings.TrimSpace(t); t != "" {
			in.TrainingData = append(in.TrainingData, t)
		}
	}

	switch {
	case in.Model == "":
		bad("input model: required (a hub id OWNER/NAME, a .gguf file or a safetensors directory)")
	case isLocal(in.Model):
		// A local file or directory is pinned by its content hash.
	case !IsHubRepo(in.Model):
		bad("input model: %q is neither an existing path nor a hub id OWNER/NAME", in.Model)
	case in.Revision == "":
		bad("input revision: required for hub model %s (a 40-hex commit sha)", in.Model)
	case !runfile.IsCommit(in.Revision) && !in.AllowUnpinned:
		bad("input revision: %q is not a 40-hex commit sha; pin the model, or set allow-unpinned: true to resolve a branch or tag", in.Revision)
	}
	if in.ModelName == "" {
		in.ModelName = in.Model
	}
	if err := checkAnchor(in.Anchor, in.ServerURL, isLocal); err != nil {
		bad("input anchor: %v", err)
	}
	if in.ServerToken != "" && in.ServerURL == "" {
		bad("input server-token: set without server-url")
	}
	if len(errs) > 0 {
		return in, fmt.Errorf("invalid inputs:\n  %s", strings.Join(errs, "\n  "))
	}
	return in, nil
}

// parseTests reads "fresh,probes" into distinct known test names.
func parseTests(v string) ([]string, error) {
	var tests []string
	for _, t := range strings.Split(v, ",") {
		t = strings.ToLower(strings.TrimSpace(t))
		switch {
		case t == "" || slices.Contains(tests, t):
		case slices.Contains(validTestNames, t):
			tests = append(tests, t)
		default:
			return nil, fmt.Errorf("%q is not one of %s", t, strings.Join(validTestNames, ", "))
		}
	}
	if len(tests) == 0 {
		return nil, fmt.Errorf("name at least one of %s", strings.Join(validTestNames, ", "))
	}
	return tests, nil
}

// Until kinds.
const (
	UntilAll     = "all"
	UntilDecided = "decided"
)

// DefaultBudget caps each test's scoring time in a pull request's
// sequential run (until: decided, the default): past it an undecided run
// stops and reports the change it can still rule out.
const DefaultBudget = "45m"

// Baseline kinds.
const (
	BaselineServer   = "server"
	BaselineNone     = "none"
	baselineRevision = "revision:"
)

func checkBaseline(b string) error {
	switch {
	case b == BaselineServer || b == BaselineNone:
		return nil
	case strings.HasPrefix(b, baselineRevision):
		rev := strings.TrimPrefix(b, baselineRevision)
		if rev == "" {
			return fmt.Errorf("%q names no revision", b)
		}
		return nil
	}
	for _, p := range strings.Split(b, ",") {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("%q has an empty run file path", b)
		}
	}
	return nil
}
