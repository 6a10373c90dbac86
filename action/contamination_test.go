package action_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/action"
	"github.com/udgamlabs/udgam-ci/evals/contamination"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

func TestActionTrainingDataScan(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.95, "probes": 45}
	var asked action.ScanRequest
	// Three of the 140 probe items are "found": the fake stands for the
	// scan command, whose own tests check what it finds.
	spec := servertest.Spec{Test: "probes", Records: 140}.Run()
	found := []string{spec.Items[0].ID, spec.Items[3].ID, spec.Items[17].ID}
	slices.Sort(found)
	w.scan = func(ctx context.Context, req action.ScanRequest) (*contamination.Report, error) {
		asked = req
		r := &contamination.Report{Schema: contamination.Schema, N: 13, Summary: map[string]contamination.Summary{
			"probes": {Items: 140, Contaminated: len(found), Above: len(found)},
			"fresh":  {Items: 140},
		}}
		for _, id := range found {
			r.Items = append(r.Items, contamination.ItemHit{Test: "probes", ID: id, NGrams: 1, Matched: 1, Fraction: 1,
				First: contamination.Location{File: "corpus/a.jsonl", Line: 7, Text: "Question: ..."}})
		}
		f, err := os.Create(req.Out)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return r, r.Encode(f)
	}
	for _, tt := range []struct {
		failOn string
		exit   int
		annot  string
	}{
		{"contamination", 1, "::error title=udgam-ci%3A test items in the training data::contamination: 3 of 140 probe items, 0 of 140 Fresh Text documents share a 13-gram with the training data"},
		{"regression", 0, "::warning title=udgam-ci%3A test items in the training data::"},
	} {
		t.Run(tt.failOn, func(t *testing.T) {
			o := w.run("pull_request", prPayload(11), map[string]string{"model": model, "revision": headSHA,
				"baseline": "revision:" + baseSHA, "fail-on": tt.failOn, "training-data": "corpus/, hf://acme/mix@" + baseSHA})
			if o.err != nil {
				t.Fatalf("%v\n%s", o.err, o.log)
			}
			if o.res.ExitCode != tt.exit || !strings.Contains(o.log, tt.annot) {
				t.Errorf("exit %d, want %d; log lacks %q?\n%s", o.res.ExitCode, tt.exit, tt.annot, o.log)
			}
			if !slices.Equal(asked.Train, []string{"corpus/", "hf://acme/mix@" + baseSHA}) || !slices.Equal(asked.Tests, []string{"fresh", "probes"}) {
				t.Errorf("scan asked %+v", asked)
			}
		})
	}
	comments := ourComments(w.gh, 11)
	if len(comments) != 1 {
		t.Fatalf("%d comments", len(comments))
	}
	body := comments[0].Body
	for _, want := range []string{
		"**Contamination:** 3 of 140 probe items, 0 of 140 Fresh Text documents share a 13-gram with the training data",
		"- probes " + found[1] + ": 1 of 1 13-grams, first at corpus/a.jsonl line 7",
		"**Without the items found**",
		fmt.Sprintf("Probe Suite (accuracy %% ↑, %d items)", 140-len(found)),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("comment lacks %q:\n%s", want, body)
		}
	}
	// Every run, head and baseline, was given the report to record.
	if len(w.scorer.scans) == 0 || slices.ContainsFunc(w.scorer.scans, func(p string) bool { return !strings.HasSuffix(p, "contamination.json") }) {
		t.Errorf("scorers were given reports %q", w.scorer.scans)
	}
}
