package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runner/testmodel"
)

// audit artifact on a tiny GGUF: against itself it passes with nothing
// flipped and no divergence; against its q4_0 made by llama.cpp's
// quantizer the JSON, the table and the Markdown section say the same.
func TestAuditArtifactCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.gguf")
	if err := testmodel.WriteOutlierBigramGGUF(ref, testmodel.RandomBigram(4), []int32{'1', '2'}, 1000); err != nil {
		t.Fatal(err)
	}
	common := []string{"--reference", ref, "--sample", "70", "--window", "256", "--stride", "128", "--threads", "1", "--resamples", "300"}

	e, stdout, stderr := freshTestEnv()
	if code := run(e, append([]string{"audit", "artifact", "--artifact", ref}, common...)); code != 0 {
		t.Fatalf("identical artifact: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"mean 0 nats", "same most likely token 100.00%", "Verdict: pass"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("identical artifact: %q missing:\n%s", want, stdout.String())
		}
	}

	out, md := filepath.Join(dir, "runs"), filepath.Join(dir, "audit.md")
	e, stdout, stderr = freshTestEnv()
	code := run(e, append([]string{"audit", "artifact", "--quantize", "q4_0", "--out-dir", out, "--json", "--markdown", md}, common...))
	if code != 0 && code != int(auditFailed) {
		t.Fatalf("q4_0: exit %d: %s", code, stderr.String())
	}
	var rep audit.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout.String())
	}
	if (code == int(auditFailed)) != (rep.Verdict == audit.Fail) || rep.Quantized != "q4_0" || !(rep.KL.Mean > 0) || rep.Artifact.Dtype == rep.Reference.Dtype {
		t.Errorf("exit %d, report %+v", code, rep)
	}
	section, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{report.FormatDelta(compare.MetricBPB, rep.Fresh.Delta), report.FormatCI(compare.MetricAccuracy, rep.Probes.CI), "q4_0"} {
		if !strings.Contains(string(section), want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, section)
		}
	}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(files) != 5 { // four run files and the made artifact
		t.Errorf("out-dir holds %v", files)
	}
}

func TestAuditArtifactUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--artifact", "a.gguf"}, "--reference is required"},
		{[]string{"--reference", "r.gguf"}, "give one of --artifact and --quantize"},
		{[]string{"--reference", "r.gguf", "--artifact", "a.gguf", "--quantize", "q4_0"}, "give one of"},
		{[]string{"--reference", "r.gguf", "--quantize", "q3_K"}, `--quantize "q3_K"`},
		{[]string{"--reference", "r.gguf", "--quantize", "q4_0", "--max-degradation", "kl=2"}, "unknown key"},
	} {
		e, _, stderr := freshTestEnv()
		if code := run(e, append([]string{"audit", "artifact"}, c.args...)); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr.String(), c.want)
		}
	}
}
