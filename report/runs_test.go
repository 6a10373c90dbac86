package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/runfile"
)

func TestRenderRunsGolden(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(60, 11, 0.95, 0.15)
	a := comparetest.FreshRun("fresh-a", "HuggingFaceTB/SmolLM2-135M", docs)
	b := comparetest.FreshRun("fresh-b", "HuggingFaceTB/SmolLM2-360M", comparetest.Shifted(docs[:50], -0.09))
	b.Header.Settings.Window = 1024
	p := comparetest.ProbeRun("probes-a", "HuggingFaceTB/SmolLM2-135M", comparetest.SynthItems(140, 3, 0.44))
	p.Header.Dataset.Smoke = true
	runs := []*runfile.Run{a, p, b}

	var md, txt bytes.Buffer
	if err := RenderRunsMarkdown(&md, runs); err != nil {
		t.Fatal(err)
	}
	if err := RenderRunsText(&txt, runs); err != nil {
		t.Fatal(err)
	}
	golden(t, "runs.md", md.Bytes())
	golden(t, "runs.txt", txt.Bytes())
	checkGitHubMarkdown(t, md.String())

	// The scores shown are the runs' own summaries.
	for _, want := range []string{
		FormatScore(compare.MetricBPB, runfile.SummarizeFresh(a.Docs).BPB),
		FormatScore(compare.MetricBPB, runfile.SummarizeFresh(b.Docs).BPB),
		fmtPct(runfile.SummarizeProbes(p.Items).Accuracy),
		"50 of 1,670", "1024 / 1024 *", "(smoke sample)",
	} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	if err := RenderRunsText(&txt, nil); err == nil {
		t.Error("no runs: want an error")
	}
}
