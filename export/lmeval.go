package export

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// lmEvalResults is the results file lm-evaluation-harness 0.4 writes
// (lm_eval/result_schema.py's EvalResults): the keys its readers use.
type lmEvalResults struct {
	Results            map[string]map[string]any  `json:"results"`
	GroupSubtasks      map[string][]string        `json:"group_subtasks"`
	Configs            map[string]map[string]any  `json:"configs"`
	Versions           map[string]float64         `json:"versions"`
	NShot              map[string]int             `json:"n-shot"`
	HigherIsBetter     map[string]map[string]bool `json:"higher_is_better"`
	NSamples           map[string]lmEvalCount     `json:"n-samples"`
	Config             map[string]any             `json:"config"`
	GitHash            string                     `json:"git_hash"`
	Date               float64                    `json:"date"`
	ModelSource        string                     `json:"model_source"`
	ModelName          string                     `json:"model_name"`
	ModelNameSanitized string                     `json:"model_name_sanitized"`
}

type lmEvalCount struct {
	Original  int `json:"original"`
	Effective int `json:"effective"`
}

// lmEvalTaskVersion is the version of udgam-ci's tasks as lm-eval tasks:
// raised when what they measure changes.
const lmEvalTaskVersion = 1.0

// LMEval writes the results as lm-evaluation-harness's results JSON, one
// task per test (udgam_fresh, udgam_probes), zero-shot. lm-eval's own
// units: accuracy as a fraction, bits per byte as is; the metric's
// standard error beside it. A comparison adds "<metric>_change" and the
// ends of its interval. File name it results_<date>.json (FileName), as
// lm-eval's readers look for.
func LMEval(w io.Writer, results []Result) error {
	if len(results) == 0 {
		return fmt.Errorf("lm-eval results: no results")
	}
	out := lmEvalResults{Results: map[string]map[string]any{}, GroupSubtasks: map[string][]string{}, Configs: map[string]map[string]any{},
		Versions: map[string]float64{}, NShot: map[string]int{}, HigherIsBetter: map[string]map[string]bool{}, NSamples: map[string]lmEvalCount{}}
	first := results[0]
	var latest time.Time
	for _, r := range results {
		if r.Model != first.Model || r.Revision != first.Revision {
			return fmt.Errorf("lm-eval results: one model per file: %s@%s and %s@%s", first.Model, first.Revision, r.Model, r.Revision)
		}
		task := taskOf(r.Test)
		if _, dup := out.Results[task]; dup {
			return fmt.Errorf("lm-eval results: two %s runs", r.Test)
		}
		id, _, hib := metricOf(r.Test)
		scale := 1.0
		if r.Test == runfile.TestProbes {
			scale = 0.01 // lm-eval's acc is a fraction
		}
		m := map[string]any{"alias": task, id + ",none": r.Score.Value * scale, id + "_stderr,none": r.StdErr * scale}
		hb := map[string]bool{id: hib}
		if c := r.Change; c != nil {
			m[id+"_change,none"] = c.Delta * scale
			m[id+"_change_ci_lo,none"], m[id+"_change_ci_hi,none"] = c.CI[0]*scale, c.CI[1]*scale
			hb[id+"_change"] = hib
		}
		out.Results[task] = m
		out.GroupSubtasks[task] = []string{}
		out.Configs[task] = map[string]any{
			"task": task, "dataset_path": r.Dataset.Name, "dataset_name": datasetLabel(r.Dataset), "output_type": outputType(r.Test),
			"num_fewshot": 0, "metric_list": []map[string]any{{"metric": id, "aggregation": aggregation(r.Test), "higher_is_better": hib}},
			"metadata": map[string]any{"version": lmEvalTaskVersion, "dataset_revision": r.Dataset.Revision, "dataset_sha256": r.Dataset.SHA256,
				"smoke": r.Dataset.Smoke},
		}
		out.Versions[task] = lmEvalTaskVersion
		out.NShot[task] = 0
		out.HigherIsBetter[task] = hb
		out.NSamples[task] = lmEvalCount{Original: max(r.Dataset.Count, r.Records), Effective: r.Records}
		if t, err := time.Parse(time.RFC3339, r.Started); err == nil && t.After(latest) {
			latest = t
		}
		out.GitHash = shortRev(r.GitSHA)
	}
	out.Config = map[string]any{"model": "udgam-ci", "model_args": "pretrained=" + first.Model + ",revision=" + first.Revision,
		"model_revision": first.Revision, "batch_size": nil, "limit": nil}
	out.Date = float64(latest.Unix())
	out.ModelSource, out.ModelName, out.ModelNameSanitized = "udgam-ci", first.Model, sanitize(first.Model)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("lm-eval results: %w", err)
	}
	return nil
}

// FileName is the name lm-eval gives a results file of the run started
// at t ("results_2026-11-30T12-00-00.000000.json"); its readers find the
// newest by it.
func FileName(t time.Time) string {
	return "results_" + t.UTC().Format("2006-01-02T15-04-05.000000") + ".json"
}

func outputType(test string) string {
	if test == runfile.TestFresh {
		return "loglikelihood_rolling"
	}
	return "multiple_choice"
}

func aggregation(test string) string {
	if test == runfile.TestFresh {
		return "bits_per_byte"
	}
	return "mean"
}

// sanitize is lm-eval's model_name_sanitized.
var unsafeName = regexp.MustCompile(`["<>:/|\\?*\[\]]+`)

func sanitize(name string) string { return unsafeName.ReplaceAllString(name, "__") }
