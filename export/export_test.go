package export_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/export"
	"github.com/udgamlabs/udgam-ci/internal/goldentest"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const model = "HuggingFaceTB/SmolLM2-135M"

// results are a fresh run and a probes run of one revision, the probes
// run compared with a base run 20 points better (a regression).
func results(t *testing.T) []export.Result {
	t.Helper()
	fresh, err := export.Of(servertest.Spec{Test: runfile.TestFresh, Model: model, Seed: 7, Records: 300, Score: 0.93}.Run())
	if err != nil {
		t.Fatal(err)
	}
	head := servertest.Spec{Test: runfile.TestProbes, Model: model, Seed: 7, Records: 400, Score: 40}.Run()
	head.Header.Dataset.Smoke = true
	head.Header.Dataset.Revision = "2026-11-30" // PyYAML would read it as a date unquoted
	base := servertest.Spec{Test: runfile.TestProbes, Model: model, Seed: 6, Records: 400, Score: 60}.Run()
	base.Header.Dataset.Smoke = true
	base.Header.Dataset.Revision = head.Header.Dataset.Revision
	probes, err := export.Compared(base, head, compare.NewOptions())
	if err != nil {
		t.Fatal(err)
	}
	return []export.Result{fresh, probes}
}

func render(t *testing.T, rs []export.Result) (card, lmeval []byte) {
	t.Helper()
	var a, b bytes.Buffer
	if err := export.ModelIndex(&a, rs, "https://ci.example/repos/o/n/models/m"); err != nil {
		t.Fatal(err)
	}
	if err := export.LMEval(&b, rs); err != nil {
		t.Fatal(err)
	}
	return a.Bytes(), b.Bytes()
}

// TestExportGolden: both formats, and the numbers each holds are the runs'.
func TestExportGolden(t *testing.T) {
	t.Parallel()
	rs := results(t)
	card, lm := render(t, rs)
	goldentest.Check(t, filepath.Join("testdata", "model-index.md"), card, *update)
	goldentest.Check(t, filepath.Join("testdata", "lm-eval.json"), lm, *update)

	var front struct {
		ModelIndex []struct {
			Name    string
			Results []struct {
				Dataset struct{ Type, Name string }
				Metrics []struct {
					Type  string
					Value float64
				}
			}
		} `yaml:"model-index"`
	}
	body := strings.TrimPrefix(strings.TrimSuffix(string(card), "---\n"), "---\n")
	if err := yaml.Unmarshal([]byte(body), &front); err != nil {
		t.Fatal(err)
	}
	mi := front.ModelIndex[0]
	if mi.Name != model || len(mi.Results) != 2 || mi.Results[0].Metrics[0].Value != rs[0].Score.Value ||
		mi.Results[1].Metrics[0].Value != rs[1].Score.Value || mi.Results[1].Metrics[1].Value != rs[1].Change.Delta ||
		!strings.Contains(mi.Results[1].Dataset.Name, "smoke sample") {
		t.Errorf("model-index read back: %+v", front)
	}
	if rs[1].Change.Verdict != compare.Regressed {
		t.Errorf("the comparison's verdict is %s", rs[1].Change.Verdict)
	}
}

// TestExportRefused: results of two models, or of one test twice, are
// one file's mistake.
func TestExportRefused(t *testing.T) {
	t.Parallel()
	rs := results(t)
	other := rs[0]
	other.Model = "someone/else"
	var b bytes.Buffer
	if err := export.ModelIndex(&b, append(rs, other), ""); err == nil || !strings.Contains(err.Error(), "one model") {
		t.Errorf("two models: %v", err)
	}
	if err := export.LMEval(&b, append(rs, rs[0])); err == nil || !strings.Contains(err.Error(), "two fresh runs") {
		t.Errorf("a test twice: %v", err)
	}
	if _, err := export.Of(&runfile.Run{Header: runfile.Header{ID: "x", Test: runfile.TestFresh}}); err == nil {
		t.Error("a run without records exported")
	}
}

// TestExportsReadByReference: huggingface_hub's own parsers read the
// model-index block back with the same numbers, and lm-eval's own code
// reads the results file (make crosscheck-exports; skipped without the
// reference stack's Python).
func TestExportsReadByReference(t *testing.T) {
	t.Parallel()
	py := os.Getenv("UDGAM_PYREF_PYTHON")
	if py == "" {
		t.Skip("UDGAM_PYREF_PYTHON is not set (make crosscheck-exports sets it to the pinned reference stack)")
	}
	rs := results(t)
	card, lm := render(t, rs)
	dir := t.TempDir()
	cardPath := filepath.Join(dir, "README.md")
	lmPath := filepath.Join(dir, export.FileName(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)))
	if err := os.WriteFile(cardPath, append(card, []byte("\n# A model\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lmPath, lm, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join("..", "scripts", "crosscheck", "exports.py"), cardPath, lmPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("exports.py: %v\n%s", err, stderr.String())
	}
	var got struct {
		ModelName   string `json:"model_name"`
		EvalResults []struct {
			TaskType        string  `json:"task_type"`
			DatasetType     string  `json:"dataset_type"`
			DatasetName     string  `json:"dataset_name"`
			DatasetRevision string  `json:"dataset_revision"`
			MetricType      string  `json:"metric_type"`
			MetricValue     float64 `json:"metric_value"`
			SourceName      string  `json:"source_name"`
		} `json:"eval_results"`
		LMEval struct {
			Table       string
			Found       []string
			UnknownKeys []string `json:"unknown_keys"`
			Results     map[string]map[string]any
		} `json:"lm_eval"`
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// The hub: one eval result per metric, the same numbers to the bit.
	want := []struct {
		metric string
		value  float64
	}{{"bits_per_byte", rs[0].Score.Value}, {"accuracy", rs[1].Score.Value}, {"accuracy_change", rs[1].Change.Delta}}
	if got.ModelName != model || len(got.EvalResults) != len(want) {
		t.Fatalf("huggingface_hub read %s with %d results: %s", got.ModelName, len(got.EvalResults), out)
	}
	for i, w := range want {
		e := got.EvalResults[i]
		if e.MetricType != w.metric || e.MetricValue != w.value || e.TaskType != "text-generation" || e.SourceName != "udgam-ci" || e.DatasetType == "" ||
			i > 0 && e.DatasetRevision != "2026-11-30" {
			t.Errorf("eval result %d: %+v, want %s = %v", i, e, w.metric, w.value)
		}
	}
	// lm-eval: its table shows each task's metric as it prints numbers,
	// the file is found as a results file, every key is one it declares.
	if len(got.LMEval.Found) != 1 || len(got.LMEval.UnknownKeys) != 0 {
		t.Errorf("lm-eval found %v, unknown keys %v", got.LMEval.Found, got.LMEval.UnknownKeys)
	}
	for task, v := range map[string]float64{"udgam_fresh": rs[0].Score.Value, "udgam_probes": rs[1].Score.Value / 100} {
		cell := strconv.FormatFloat(v, 'f', 4, 64)
		if !strings.Contains(got.LMEval.Table, task) || !strings.Contains(got.LMEval.Table, cell) {
			t.Errorf("lm-eval's table lacks %s = %s:\n%s", task, cell, got.LMEval.Table)
		}
	}
	if v, _ := got.LMEval.Results["udgam_probes"]["acc,none"].(float64); math.Abs(v-rs[1].Score.Value/100) > 1e-15 {
		t.Errorf("acc,none = %v, want %v", v, rs[1].Score.Value/100)
	}
	t.Logf("lm-eval's table:\n%s", got.LMEval.Table)
}
