//go:build cgo

package main

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/hub/hubtest"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
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
	for _, want := range []string{"mean 0 nats", "same most likely token 100.00%", "Verdict: pass",
		"Data scored: Fresh Text: the smoke sample, 30 documents, not the benchmark; Probe Suite: udgam-probes core (generated, seed 2026), 70 of 2,000 items."} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("identical artifact: %q missing:\n%s", want, stdout.String())
		}
	}

	out, md := filepath.Join(dir, "runs"), filepath.Join(dir, "audit.md")
	e, stdout, stderr = freshTestEnv()
	code := run(e, append([]string{"audit", "artifact", "--quantize", "q4_0", "--out-dir", out, "--json", "--markdown", md,
		"--git-repo", "acme/train", "--git-sha", strings.Repeat("c", 40), "--git-ref", "main"}, common...))
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

	// audit push puts the same report on a report server, whose audit
	// page shows every cell and line the Markdown section does.
	reportFile := filepath.Join(dir, "audit.json")
	if err := os.WriteFile(reportFile, stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	live := servertest.Start(t, server.Config{CompareResamples: 200}, "acme/train")
	e, stdout, stderr = freshTestEnv()
	if code := run(e, []string{"audit", "push", "--server", live.URL, "--token", live.Tokens[0], "--json", "--runs", out, reportFile}); code != 0 {
		t.Fatalf("audit push: exit %d: %s", code, stderr.String())
	}
	var up struct{ URL string }
	if err := json.Unmarshal(stdout.Bytes(), &up); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sec := rep.Section()
	cells := append([][]string{}, sec.Summary[1:]...)
	for _, typ := range sec.Types {
		cells = append(append(cells, typ.Cells), typ.Levels...)
	}
	for _, row := range cells {
		for _, c := range row {
			if !strings.Contains(html.UnescapeString(string(page)), ">"+c+"</td>") || !strings.Contains(string(section), c) {
				t.Errorf("cell %q is not on the audit page %s and in the Markdown", c, up.URL)
			}
		}
	}
	for _, line := range []string{sec.KL, sec.Verdict} {
		if !strings.Contains(html.UnescapeString(string(page)), line) || !strings.Contains(string(section), line) {
			t.Errorf("line %q is not on the audit page and in the Markdown", line)
		}
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

// --artifact hf://OWNER/NAME@COMMIT/FILE.gguf audits a GGUF of a hub
// repository at a pinned commit, downloaded through the hub client; a
// branch is refused.
func TestAuditArtifactFromHub(t *testing.T) {
	t.Parallel()
	const sha = "4444444444444444444444444444444444444444"
	dir := t.TempDir()
	ref, q8 := filepath.Join(dir, "ref.gguf"), filepath.Join(dir, "q8.gguf")
	if err := testmodel.WriteOutlierBigramGGUF(ref, testmodel.RandomBigram(6), nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := llama.Quantize(ref, q8, "q8_0", 1); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(q8)
	if err != nil {
		t.Fatal(err)
	}
	fh := hubtest.New(t)
	fh.Add("acme/tiny-gguf", sha, map[string][]byte{"tiny-q8_0.gguf": b}, "tiny-q8_0.gguf")
	vars := map[string]string{"HF_ENDPOINT": fh.URL, "UDGAM_CI_CACHE": t.TempDir()}
	common := []string{"audit", "artifact", "--reference", ref, "--sample", "70", "--window", "256", "--stride", "128", "--threads", "1", "--resamples", "300", "--json"}

	e, stdout, stderr := actionTestEnv(vars)
	code := run(e, append(common, "--artifact", "hf://acme/tiny-gguf@"+sha+"/tiny-q8_0.gguf"))
	if code != 0 && code != int(auditFailed) {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep audit.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json: %v", err)
	}
	if fh.Count("GET /acme/tiny-gguf/resolve/"+sha+"/tiny-q8_0.gguf") != 1 || rep.KL.Tokens == 0 || rep.Artifact.SHA256 == rep.Reference.SHA256 {
		t.Errorf("requests %v, report %+v / %+v", fh.Requests(), rep.Artifact, rep.KL)
	}

	e, _, stderr = actionTestEnv(vars)
	if code := run(e, append(common, "--artifact", "hf://acme/tiny-gguf@main/tiny-q8_0.gguf")); code != 1 || !strings.Contains(stderr.String(), "commit") {
		t.Errorf("a branch: exit %d, %s", code, stderr.String())
	}
}
