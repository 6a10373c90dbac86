package export

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// The model-index block, as the hub's model card spec lays it out
// (huggingface_hub.repocard_data.model_index_to_eval_results reads it).
type (
	miModel struct {
		Name    string     `yaml:"name"`
		Results []miResult `yaml:"results"`
	}
	miResult struct {
		Task    miTask     `yaml:"task"`
		Dataset miDataset  `yaml:"dataset"`
		Metrics []miMetric `yaml:"metrics"`
		Source  miSource   `yaml:"source"`
	}
	miTask struct {
		Type string `yaml:"type"`
		Name string `yaml:"name"`
	}
	miDataset struct {
		Type     string         `yaml:"type"`
		Name     string         `yaml:"name"`
		Revision string         `yaml:"revision,omitempty"`
		Args     map[string]any `yaml:"args,omitempty"`
	}
	miMetric struct {
		Type     string         `yaml:"type"`
		Value    float64        `yaml:"value"`
		Name     string         `yaml:"name"`
		Args     map[string]any `yaml:"args,omitempty"`
		Verified bool           `yaml:"verified"`
	}
	miSource struct {
		Name string `yaml:"name"`
		URL  string `yaml:"url,omitempty"`
	}
)

// ModelIndex writes a model card's YAML front matter holding the
// model-index block of results (one model: the first result's), with
// sourceURL, if any, as where the results come from. Accuracy is in
// percent, as udgam-ci shows it; a comparison adds the change as a metric
// of its own ("<metric>_change"), with its interval and verdict.
func ModelIndex(w io.Writer, results []Result, sourceURL string) error {
	if len(results) == 0 {
		return errors.New("model-index: no results")
	}
	m := miModel{Name: results[0].Model}
	for _, r := range results {
		if r.Model != m.Name {
			return fmt.Errorf("model-index: one model per card: %s and %s", m.Name, r.Model)
		}
		id, name, _ := metricOf(r.Test)
		if r.Test == runfile.TestProbes {
			id = "accuracy" // the hub's id; lm-eval's is acc
		}
		args := map[string]any{"ci": []float64{r.Score.Lo, r.Score.Hi}, "ci_level": compare.ScoreLevel, "stderr": r.StdErr,
			"records": r.Records, "model_revision": r.Revision}
		metrics := []miMetric{{Type: id, Value: r.Score.Value, Name: name, Args: args}}
		if c := r.Change; c != nil {
			metrics = append(metrics, miMetric{Type: id + "_change", Value: c.Delta,
				Name: fmt.Sprintf("change since %s@%s (%s)", c.BaseModel, shortRev(c.BaseRevision), c.Verdict),
				Args: map[string]any{"ci": []float64{c.CI[0], c.CI[1]}, "ci_level": c.Level, "verdict": string(c.Verdict), "base_run": c.BaseID}})
		}
		task := "Fresh Text"
		if r.Test == runfile.TestProbes {
			task = "Probe Suite"
		}
		m.Results = append(m.Results, miResult{
			Task:    miTask{Type: "text-generation", Name: "udgam-ci " + task},
			Dataset: miDataset{Type: r.Dataset.Name, Name: datasetLabel(r.Dataset), Revision: r.Dataset.Revision, Args: datasetArgs(r.Dataset)},
			Metrics: metrics,
			Source:  miSource{Name: "udgam-ci", URL: sourceURL},
		})
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(map[string]any{"model-index": []miModel{m}}); err != nil {
		return fmt.Errorf("model-index: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("model-index: %w", err)
	}
	b.WriteString("---\n")
	_, err := w.Write(b.Bytes())
	return err
}

func datasetArgs(d runfile.Dataset) map[string]any {
	a := map[string]any{"sha256": d.SHA256, "count": d.Count}
	if d.Smoke {
		a["smoke"] = true
	}
	return a
}

func shortRev(rev string) string {
	if len(rev) > 10 {
		return rev[:10]
	}
	return rev
}
