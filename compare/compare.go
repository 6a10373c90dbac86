// Package report compares two runs of the same test by paired bootstrap,
// gives each comparison a verdict, and renders comparisons and run summaries
// as a PR comment, a GitHub job summary or plain text.
package compare

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// Metric names, as in `compare --json`.
const (
	MetricBPB      = "bpb"      // fresh text: bits per byte, lower is better
	MetricAccuracy = "accuracy" // probes: percent correct, higher is better
)

// Verdict is what a comparison concludes.
type Verdict string

// Verdicts. A change counts only when the interval excludes zero and the
// point estimate is at least the minimum effect.
const (
	Improved  Verdict = "improved"
	Regressed Verdict = "regressed"
	NoChange  Verdict = "no change"
)

// Defaults used when an Options field is zero; the minimum effect has
// its own (DefaultMinEffect), since 0 asks for none.
const (
	DefaultResamples  = 4000
	DefaultConfidence = 0.95
	DefaultMinShared  = 10
	DefaultMovers     = 5
	// DefaultSeed seeds the bootstrap wherever no seed is asked for: the
	// command line, the Action and the report server, so one comparison
	// shows the same interval on every surface.
	DefaultSeed uint64 = 0
)

// MinEffect is the smallest delta that counts as a change, per test, in
// its unit: bits per byte for fresh text, accuracy points for probes. 0
// is no minimum: a change counts once its interval excludes zero.
type MinEffect struct {
	BPB      float64
	Accuracy float64
}

// DefaultMinEffect is test's default minimum effect, in its unit: the one
// the command line, the Action and compare all start from.
func DefaultMinEffect(test string) float64 {
	if test == runfile.TestFresh {
		return 0.002 // bits per byte
	}
	return 1.0 // accuracy points
}

// Of is the minimum effect for test.
func (m MinEffect) Of(test string) float64 {
	if test == runfile.TestFresh {
		return m.BPB
	}
	return m.Accuracy
}

// Options tune Runs. NewOptions gives the defaults; in the zero value the
// fields that say so take their default, and the minimum effect is 0.
type Options struct {
	Resamples  int     // bootstrap resamples; 0 means DefaultResamples
	Seed       uint64  // the generator's seed; every seed is valid, 0 included
	Confidence float64 // interval level in (0,1); 0 means DefaultConfidence
	// MinEffect is the smallest delta per test that counts as a change;
	// 0 is none.
	MinEffect MinEffect
	// MinShared is the fewest shared records Runs accepts; groups with
	// fewer are shown but never judged. 0 means DefaultMinShared.
	MinShared int
	// AllowSettingsMismatch compares runs whose judged settings differ;
	// the differences are then carried first in SettingsDiff.
	AllowSettingsMismatch bool
	ByLevel               bool // probes: also compare each type/level
	// HeadlineOnly computes the comparison of all records alone, leaving
	// ByGroup, ByLevel and Movers empty; its numbers are the full
	// comparison's (each group resamples its own stream).
	HeadlineOnly bool
	Movers       int // records listed per direction; 0 means DefaultMovers
	// Workers resample in parallel; 0 means GOMAXPROCS. The result does
	// not depend on it.
	Workers int
}

// NewOptions are the options every surface starts from: each test's
// default minimum effect, and the other defaults above.
func NewOptions() Options {
	return Options{
		Resamples: DefaultResamples, Confidence: DefaultConfidence, MinShared: DefaultMinShared, Movers: DefaultMovers,
		MinEffect: MinEffect{BPB: DefaultMinEffect(runfile.TestFresh), Accuracy: DefaultMinEffect(runfile.TestProbes)},
	}
}

func (o Options) withDefaults() Options {
	orDefault(&o.Resamples, DefaultResamples)
	orDefault(&o.Confidence, DefaultConfidence)
	orDefault(&o.MinShared, DefaultMinShared)
	orDefault(&o.Movers, DefaultMovers)
	return o
}

// orDefault sets a zero option to its default.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

func (o Options) validate() error {
	switch {
	case o.Resamples < 1:
		return fmt.Errorf("resamples %d: want at least 1", o.Resamples)
	case !(o.Confidence > 0 && o.Confidence < 1):
		return fmt.Errorf("confidence %v: want a level between 0 and 1, such as 0.95", o.Confidence)
	case o.MinShared < 1:
		return fmt.Errorf("minimum shared records %d: want at least 1", o.MinShared)
	}
	for _, v := range []float64{o.MinEffect.BPB, o.MinEffect.Accuracy} {
		if !(v >= 0) || math.IsInf(v, 1) {
			return fmt.Errorf("minimum effect %v: want a number, 0 or more", v)
		}
	}
	return nil
}

// Result is one paired comparison: the whole test or one group of it. Its
// first fields are the `compare --json` contract.
type Result struct {
	Metric      string     `json:"metric"`
	Base        float64    `json:"base"`
	Head        float64    `json:"head"`
	Delta       float64    `json:"delta"` // head - base
	CI          [2]float64 `json:"ci"`    // percentile interval of Delta
	N           int        `json:"n"`     // shared records
	Significant bool       `json:"significant"`
	Verdict     Verdict    `json:"verdict"`
	// PValue is two-sided: twice the smaller share of resamples on either
	// side of zero, so it is below 1-Confidence exactly when CI excludes 0.
	PValue float64 `json:"p_value"`
	SE     float64 `json:"se"` // standard deviation of the resampled deltas
	// MDE is the smallest delta this sample could detect (see mde).
	MDE float64 `json:"mde"`
	// TooFew marks a group with fewer than MinShared records: never judged.
	TooFew bool   `json:"too_few,omitempty"`
	Flips  *Flips `json:"flips,omitempty"` // probes only
	// Margin compares the byte-normalised margin (probes whose records
	// carry per-byte scores).
	Margin *Margin `json:"margin,omitempty"`
}

// Flips counts how paired probe items changed between the runs.
type Flips struct {
	RightToWrong int `json:"right_to_wrong"`
	WrongToRight int `json:"wrong_to_right"`
	BothRight    int `json:"both_right"`
	BothWrong    int `json:"both_wrong"`
}

// SettingDiff is one header setting that differs between the runs.
type SettingDiff struct {
	runfile.Diff
	// Expected marks a judged setting that differs by design because the
	// models differ (their tokenizers): said, not refused.
	Expected bool `json:"expected,omitempty"`
}

// Mover is one document or item that moved the comparison.
type Mover struct {
	ID    string `json:"id"`
	Group string `json:"group"`
	// Fresh text: each run's bits per byte for the document, and Change is
	// its share of the overall delta (the shares sum to Delta). Probes:
	// each run's margin in nats (answer log-prob minus the best other
	// choice), and Change is head margin - base margin.
	Base   float64 `json:"base"`
	Head   float64 `json:"head"`
	Change float64 `json:"change"`
}

// Movers lists the records that moved most in each direction.
type Movers struct {
	Worse  []Mover `json:"worse"`
	Better []Mover `json:"better"`
}

// RunRef names one side of a comparison.
type RunRef struct {
	ID       string `json:"id"`
	Model    string `json:"model"`
	Revision string `json:"revision,omitempty"`
	Dataset  string `json:"dataset,omitempty"`
	GitSHA   string `json:"git_sha,omitempty"`
	GitRef   string `json:"git_ref,omitempty"`
	PR       *int   `json:"pr,omitempty"`
	Records  int    `json:"records"`
	// Reused is set when the run scored nothing: its model was unchanged
	// from a baseline's, whose records it holds.
	Reused *runfile.Reused `json:"reused,omitempty"`
	// The test data: what a reader needs to know what was measured.
	DatasetRevision string `json:"dataset_revision,omitempty"`
	DatasetSHA256   string `json:"dataset_sha256,omitempty"`
	DatasetCount    int    `json:"dataset_count,omitempty"`
	Smoke           bool   `json:"smoke,omitempty"` // the embedded smoke sample, never the benchmark
	// Probes, by type: the accuracy of guessing and of the best constant
	// answer (runfile.Dataset.Constant), in percent.
	Chance   map[string]float64 `json:"chance,omitempty"`
	Constant map[string]float64 `json:"constant,omitempty"`
}

// Comparison is the paired comparison of two runs of one test. Its JSON is
// the `compare --json` output.
type Comparison struct {
	Result
	// SettingsDiff lists every differing setting, judged ones first.
	SettingsDiff []SettingDiff `json:"settings_diff"`
	// ByGroup holds one Result per source (fresh text) or type (probes).
	ByGroup map[string]*Result `json:"by_group"`
	// ByLevel holds one Result per "type/level" when asked (probes).
	ByLevel map[string]*Result `json:"by_level,omitempty"`

	Test       string  `json:"test"`
	GroupBy    string  `json:"group_by"` // "source" or "type"
	Confidence float64 `json:"confidence"`
	Resamples  int     `json:"resamples"`
	Seed       uint64  `json:"seed"`
	MinEffect  float64 `json:"min_effect"`
	OnlyBase   int     `json:"only_base"` // records only in the base run
	OnlyHead   int     `json:"only_head"`
	Movers     Movers  `json:"movers"`
	BaseRun    RunRef  `json:"base_run"`
	HeadRun    RunRef  `json:"head_run"`
	SameModel  bool    `json:"same_model"`
	// Mismatch is true when judged settings differ (not by design) and the
	// comparison went ahead because it was asked to.
	Mismatch bool     `json:"settings_mismatch"`
	Notes    []string `json:"notes,omitempty"`
	// Sequential is set when the head run was scored sequentially (--until
	// decided): then Result.CI is its anytime-valid interval.
	Sequential *Sequential `json:"sequential,omitempty"`
	// Variants sets the runs' prompt-variant spreads beside the gap
	// between them (probes runs that scored variants).
	Variants *VariantComparison `json:"variants,omitempty"`
}

// MismatchError is returned when judged settings differ and the options do
// not allow it. Callers may test for it with errors.As.
type MismatchError struct {
	Base, Head string // run ids
	Diffs      []SettingDiff
}

func (e *MismatchError) Error() string {
	ds := make([]runfile.Diff, len(e.Diffs))
	for i, d := range e.Diffs {
		ds[i] = d.Diff
	}
	return fmt.Sprintf("runs %s and %s differ in settings that change results (%s); compare them anyway with --allow-settings-mismatch",
		e.Base, e.Head, runfile.FormatDiffs(ds))
}

// Runs pairs the records of two runs of the same test by id and compares
// them on the shared records by paired bootstrap, overall and per group.
// It refuses runs of different tests, runs sharing fewer than MinShared
// records, and runs whose judged settings differ (a *MismatchError) unless
// AllowSettingsMismatch is set.
func Runs(base, head *runfile.Run, opts Options) (*Comparison, error) {
	return RunsContext(context.Background(), base, head, opts)
}

// RunsContext is Runs that gives up, with ctx's error, once ctx is
// done: the bootstrap checks it between chunks of resamples, so a server
// stops the work of a request whose client left or whose time ran out.
func RunsContext(ctx context.Context, base, head *runfile.Run, opts Options) (*Comparison, error) {
	if base == nil || head == nil {
		return nil, errors.New("compare: a run is missing")
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("compare options: %w", err)
	}
	bh, hh := base.Header, head.Header
	if bh.Test != hh.Test {
		return nil, fmt.Errorf("base run %s is a %s run but head run %s is a %s run", bh.ID, bh.Test, hh.ID, hh.Test)
	}
	c := &Comparison{
		Test:       bh.Test,
		Confidence: opts.Confidence,
		Resamples:  opts.Resamples,
		Seed:       opts.Seed,
		BaseRun:    runRef(base),
		HeadRun:    runRef(head),
		SameModel:  runfile.SameModel(bh, hh),
	}
	if err := c.diffSettings(bh, hh, opts.AllowSettingsMismatch); err != nil {
		return nil, err
	}

	var p paired
	switch c.Test {
	case runfile.TestFresh:
		p = pairDocs(base.Docs, head.Docs)
		c.Metric, c.GroupBy = MetricBPB, "source"
	case runfile.TestProbes:
		p = pairItems(base.Items, head.Items)
		c.Metric, c.GroupBy = MetricAccuracy, "type"
	default:
		return nil, fmt.Errorf("run %s: unknown test %q", bh.ID, c.Test)
	}
	c.MinEffect = opts.MinEffect.Of(c.Test)
	c.OnlyBase, c.OnlyHead = p.onlyBase, p.onlyHead
	if n := len(p.recs); n < opts.MinShared {
		return nil, fmt.Errorf("runs %s and %s share %d records (base has %d, head %d); at least %d are needed",
			bh.ID, hh.ID, n, base.Len(), head.Len(), opts.MinShared)
	}

	j := judge{ctx: ctx, opts: opts, metric: c.Metric, minEffect: c.MinEffect}
	var err error
	if c.Result, err = j.result("", p.recs); err != nil {
		return nil, err
	}
	if head.Header.Sequential != nil {
		s, note := sequentialResult(base, head)
		if note != "" {
			c.Notes = append(c.Notes, note)
		}
		if s != nil && base.Header.ID != head.Header.Sequential.Baseline {
			c.Notes = append(c.Notes, fmt.Sprintf("The head run decided against baseline run %s; this comparison replays it against run %s.", head.Header.Sequential.Baseline, base.Header.ID))
		}
		if s != nil {
			c.Sequential = s
			c.MinEffect = s.MinEffect // the run stopped by its own
			judgeSequential(&c.Result, s, s.MinEffect)
			c.Notes = append(c.Notes, fmt.Sprintf("Groups: fixed-sample bootstrap intervals over the %d records scored, not anytime-valid.", c.N))
		}
	}
	if opts.HeadlineOnly {
		return c, nil
	}
	results := func(key func(*record) string) (map[string]*Result, error) {
		out := map[string]*Result{}
		for _, g := range groupRecs(p.recs, key) {
			r, err := j.result(g.key, g.recs)
			if err != nil {
				return nil, err
			}
			out[g.key] = &r
		}
		return out, nil
	}
	if c.ByGroup, err = results(func(r *record) string { return r.group }); err != nil {
		return nil, err
	}
	if opts.ByLevel && c.Test == runfile.TestProbes {
		if c.ByLevel, err = results(func(r *record) string { return r.level }); err != nil {
			return nil, err
		}
	}
	c.Movers = movers(c.Test, p.recs, opts.Movers)
	if c.Variants, err = compareVariants(ctx, base, head, opts, c.Delta); err != nil {
		return nil, err
	}
	return c, nil
}

func runRef(r *runfile.Run) RunRef {
	h := r.Header
	ref := RunRef{
		ID: h.ID, Model: h.Model.Name, Revision: h.Model.Revision, Dataset: h.Dataset.Name,
		GitSHA: h.Git.SHA, GitRef: h.Git.Ref, PR: h.Git.PR, Records: r.Len(),
		DatasetRevision: h.Dataset.Revision, DatasetSHA256: h.Dataset.SHA256, DatasetCount: h.Dataset.Count,
		Smoke: h.Dataset.Smoke, Constant: h.Dataset.Constant, Reused: h.Reused,
	}
	if h.Test == runfile.TestProbes && len(r.Items) > 0 {
		ref.Chance = map[string]float64{}
		for k, g := range runfile.SummarizeProbes(r.Items).ByType {
			ref.Chance[k] = g.Chance
		}
	}
	return ref
}

// byDesign lists the judged settings that follow from the model itself, so
// they differ by design when two different models are compared.
func byDesign(d runfile.Diff, bh, hh runfile.Header) bool {
	switch d.Key {
	case "tokenizer_sha256", "bos_id":
		return true
	case "add_bos": // "auto" follows the tokenizer
		return bh.Settings.BOSMode == hh.Settings.BOSMode
	case "text_prep": // the normalizer and added tokens follow the tokenizer; how text is prepared does not
		b, h := bh.Settings.TextPrep, hh.Settings.TextPrep
		return b != nil && h != nil && b.By == h.By && b.Unverified == "" && h.Unverified == ""
	}
	return false
}

// Classify lists every setting that differs between two headers, judged
// first, marking those that differ by design because the models differ.
func Classify(bh, hh runfile.Header) []SettingDiff {
	same := runfile.SameModel(bh, hh)
	out := []SettingDiff{}
	for _, d := range runfile.SettingsDiff(bh, hh) {
		out = append(out, SettingDiff{Diff: d, Expected: d.Judged && !same && byDesign(d, bh, hh)})
	}
	return out
}

// Refuses reports whether the difference makes the comparison unsound:
// a judged setting that does not follow from comparing two models.
func (d SettingDiff) Refuses() bool { return d.Judged && !d.Expected }

// diffSettings fills SettingsDiff and Notes, and refuses a judged mismatch
// unless allowed.
func (c *Comparison) diffSettings(bh, hh runfile.Header, allow bool) error {
	c.SettingsDiff = Classify(bh, hh)
	var refused []SettingDiff
	expected := false
	for _, d := range c.SettingsDiff {
		expected = expected || d.Expected
		if d.Refuses() {
			refused = append(refused, d)
		}
	}
	if !c.SameModel {
		note := fmt.Sprintf("Different models (%s vs %s), the same tokenizer", c.BaseRun.Model, c.HeadRun.Model)
		if bh.Settings.TokenizerSHA256 != hh.Settings.TokenizerSHA256 {
			what := "accuracy compares across tokenizers"
			if c.Test == runfile.TestFresh {
				what = "bits per byte compares across tokenizers"
			}
			note = fmt.Sprintf("Different models (%s vs %s): %s", c.BaseRun.Model, c.HeadRun.Model, what)
		}
		if expected {
			note += "; their tokenizer settings differ by design"
		}
		c.Notes = append(c.Notes, note+".")
	}
	for _, r := range []struct {
		which string
		h     runfile.Header
	}{{"base", bh}, {"head", hh}} {
		if tp := r.h.Settings.TextPrep; tp != nil && tp.Unverified != "" {
			c.Notes = append(c.Notes, fmt.Sprintf("The %s model's tokenizer is unverified (--allow-unverified-tokenizer): %s.", r.which, tp.Unverified))
		}
	}
	if len(refused) == 0 {
		return nil
	}
	if !allow {
		return &MismatchError{Base: bh.ID, Head: hh.ID, Diffs: refused}
	}
	c.Mismatch = true
	return nil
}

// judge turns resampled records into a Result.
type judge struct {
	ctx       context.Context
	opts      Options
	metric    string
	minEffect float64
}

func (j judge) result(key string, recs []record) (Result, error) {
	scale := 1.0
	if j.metric == MetricAccuracy {
		scale = 100
	}
	est := estimate(recs, scale)
	stats, err := bootstrap(j.ctx, recs, scale, j.opts.Resamples, j.opts.Seed, streamOf(key), j.opts.Workers)
	if err != nil {
		return Result{}, err
	}
	alpha := 1 - j.opts.Confidence
	r := Result{
		Metric: j.metric,
		Base:   est.base,
		Head:   est.head,
		Delta:  est.head - est.base,
		CI:     [2]float64{quantile(stats, alpha/2), quantile(stats, 1-alpha/2)},
		N:      len(recs),
		PValue: pValue(stats),
		SE:     stddev(stats),
		TooFew: len(recs) < j.opts.MinShared,
	}
	r.MDE = mde(r.SE, j.opts.Confidence)
	r.Verdict = NoChange
	if !r.TooFew {
		r.Verdict = Judge(j.metric, r.Delta, r.CI, j.minEffect)
	}
	r.Significant = r.Verdict != NoChange
	if j.metric == MetricAccuracy {
		r.Flips = flips(recs)
		if r.Margin, err = j.margin(key, recs, &r); err != nil {
			return Result{}, err
		}
	}
	return r, nil
}

// Judge is the verdict rule of a change with its interval: it counts
// when the interval excludes zero and the change is at least minEffect,
// and its direction and the metric say which way. Stored changes (the
// server's, since an anchor) are judged by it too.
func Judge(metric string, delta float64, ci [2]float64, minEffect float64) Verdict {
	if !excludesZero(ci) || math.Abs(delta) < minEffect {
		return NoChange
	}
	return direction(metric, delta > 0)
}

// mde is the smallest true delta the sample would detect: with the
// bootstrap standard error SE, a two-sided test at the confidence level
// finds a delta of (z_{1-α/2} + z_{0.8})·SE four times in five (80% power,
// the usual planning convention).
func mde(se, confidence float64) float64 {
	return (normalQuantile(1-(1-confidence)/2) + normalQuantile(0.8)) * se
}

func normalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

func flips(recs []record) *Flips {
	f := &Flips{}
	for _, r := range recs {
		b, h := r.bn == 1, r.hn == 1
		switch {
		case b && h:
			f.BothRight++
		case b:
			f.RightToWrong++
		case h:
			f.WrongToRight++
		default:
			f.BothWrong++
		}
	}
	return f
}

type recGroup struct {
	key  string
	recs []record
}

// groupRecs splits records by key, in key order.
func groupRecs(recs []record, key func(*record) string) []recGroup {
	m := map[string][]record{}
	for i := range recs {
		k := key(&recs[i])
		m[k] = append(m[k], recs[i])
	}
	out := make([]recGroup, 0, len(m))
	for _, k := range runfile.SortedKeys(m) {
		out = append(out, recGroup{k, m[k]})
	}
	return out
}

// movers lists the records that moved most each way: for fresh text the
// documents with the largest share of the delta, for probes the flipped
// items with the largest change of margin.
func movers(test string, recs []record, k int) Movers {
	var worse, better []Mover
	if test == runfile.TestFresh {
		est := estimate(recs, 1)
		for _, r := range recs {
			m := Mover{ID: r.id, Group: r.group, Base: safeDiv(r.bn, r.bd), Head: safeDiv(r.hn, r.hd),
				Change: safeDiv(r.hn, est.headDen) - safeDiv(r.bn, est.baseDen)}
			switch {
			case m.Change > 0:
				worse = append(worse, m)
			case m.Change < 0:
				better = append(better, m)
			}
		}
	} else {
		for _, r := range recs {
			m := Mover{ID: r.id, Group: r.group, Base: r.baseMargin, Head: r.headMargin, Change: r.headMargin - r.baseMargin}
			switch {
			case r.bn == 1 && r.hn == 0:
				worse = append(worse, m)
			case r.bn == 0 && r.hn == 1:
				better = append(better, m)
			}
		}
	}
	// Worse: bpb up or margin down, the largest first.
	up := func(ms []Mover, sign float64) []Mover {
		sort.Slice(ms, func(a, b int) bool {
			if ms[a].Change != ms[b].Change {
				return sign*ms[a].Change > sign*ms[b].Change
			}
			return ms[a].ID < ms[b].ID
		})
		if len(ms) == 0 {
			return []Mover{} // JSON [] rather than null
		}
		return ms[:min(k, len(ms))]
	}
	if test == runfile.TestFresh {
		return Movers{Worse: up(worse, 1), Better: up(better, -1)}
	}
	return Movers{Worse: up(worse, -1), Better: up(better, 1)}
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
