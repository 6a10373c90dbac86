// Package export writes udgam-ci's results in the formats other tools
// read: the model-index block of a Hugging Face model card (the hub shows
// it as the model's evaluation results) and lm-evaluation-harness's
// results JSON as its 0.4 series writes it. A run exports its score; a
// comparison exports the head run's score and its change since the base.
package export

import (
	"fmt"
	"math"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Result is one run's number as every format writes it.
type Result struct {
	Test     string
	Model    string
	Revision string
	Dataset  runfile.Dataset
	Score    compare.RunScore // the run's own interval is at compare.ScoreLevel
	Records  int
	// StdErr is the score's standard error in the score's unit: for
	// accuracy lm-eval's own (the sample standard deviation of the 0/1
	// outcomes over √n), for bits per byte the half-width of the run's
	// interval over the normal quantile of its level.
	StdErr  float64
	Started string // RFC 3339
	GitSHA  string
	Change  *Change // a comparison's; nil for a run
}

// Change is a comparison's change from its base run to the run.
type Change struct {
	BaseID       string
	BaseModel    string
	BaseRevision string
	Delta        float64
	CI           [2]float64
	Level        float64
	Verdict      compare.Verdict
}

// Of is a run's result.
func Of(r *runfile.Run) (Result, error) {
	h := r.Header
	if h.Test != runfile.TestFresh && h.Test != runfile.TestProbes {
		return Result{}, fmt.Errorf("run %s: test %q: want %s or %s", h.ID, h.Test, runfile.TestFresh, runfile.TestProbes)
	}
	s := compare.ScoreRun(r)
	res := Result{Test: h.Test, Model: h.Model.Name, Revision: h.Model.Revision, Dataset: h.Dataset, Score: s,
		Records: len(r.Docs) + len(r.Items), Started: h.StartedAt.UTC().Format("2006-01-02T15:04:05Z"), GitSHA: h.Git.SHA}
	if res.Records == 0 {
		return Result{}, fmt.Errorf("run %s has no records", h.ID)
	}
	if h.Test == runfile.TestProbes {
		p := s.Value / 100
		res.StdErr = 100 * math.Sqrt(p*(1-p)/float64(max(1, res.Records-1)))
	} else {
		z := math.Sqrt2 * math.Erfinv(compare.ScoreLevel)
		res.StdErr = (s.Hi - s.Lo) / (2 * z)
	}
	for _, v := range []float64{s.Value, s.Lo, s.Hi, res.StdErr} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Result{}, fmt.Errorf("run %s: its score %v [%v, %v] is not a number every format can hold", h.ID, s.Value, s.Lo, s.Hi)
		}
	}
	return res, nil
}

// Compared is the head run's result with its change since base, as
// udgam-ci compare judges it under opts.
func Compared(base, head *runfile.Run, opts compare.Options) (Result, error) {
	res, err := Of(head)
	if err != nil {
		return res, err
	}
	cmp, err := compare.Runs(base, head, opts)
	if err != nil {
		return res, fmt.Errorf("compare %s with %s: %w", base.Header.ID, head.Header.ID, err)
	}
	res.Change = &Change{BaseID: base.Header.ID, BaseModel: base.Header.Model.Name, BaseRevision: base.Header.Model.Revision,
		Delta: cmp.Delta, CI: cmp.CI, Level: cmp.Confidence, Verdict: cmp.Verdict}
	return res, nil
}

// metricOf names a test's metric in the other tools' words: lm-eval's
// and the hub's metric ids.
func metricOf(test string) (id, name string, higherIsBetter bool) {
	if test == runfile.TestFresh {
		return "bits_per_byte", "bits per byte (lower is better)", false
	}
	return "acc", "probe accuracy, % (higher is better)", true
}

// taskOf is the lm-eval task name of a test.
func taskOf(test string) string { return "udgam_" + test }

// datasetLabel names the data a run scored, saying when it is the smoke
// sample (never the benchmark).
func datasetLabel(d runfile.Dataset) string {
	if d.Smoke {
		return d.Name + " (smoke sample)"
	}
	return d.Name
}
