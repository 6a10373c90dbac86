//go:build cgo

package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// TestConvertedFalconH1Scores converts a tiny Falcon-H1 (hybrid, no BOS,
// as Falcon-H1-Tiny) with `model convert`, checks what `model info` says of
// it, and scores it with `score fresh` (without BOS: the first token of each
// document unscored and its bytes left out), whose bits per byte must equal
// the float64 reference's on the same tokens, and with `score probes`.
func TestConvertedFalconH1Scores(t *testing.T) {
	t.Parallel()
	docs, data, items := scoringInputs(t, 5)
	c := converttest.SmallFalconH1.Checkpoint()
	ckpt := filepath.Join(t.TempDir(), "repo")
	if err := c.Write(ckpt, converttest.Safetensors); err != nil {
		t.Fatal(err)
	}
	gguf := filepath.Join(t.TempDir(), "m.gguf")
	if e, _, stderr := freshTestEnv(); run(e, []string{"model", "convert", ckpt, "--out", gguf}) != 0 {
		t.Fatalf("model convert: %s", stderr)
	}
	modelInfoSays(t, gguf, "family            hybrid", "layers            2 x attention+ssm")
	bpb := scoreFreshBPB(t, gguf, data, "--add-bos", "auto")
	want := noBOSReferenceBPB(t, gguf, c, docs)
	t.Logf("score fresh: bpb %.9f, float64 reference %.9f", bpb, want)
	if math.Abs(bpb-want) > 1e-6*want {
		t.Errorf("score fresh: bpb %.9f, float64 reference %.9f", bpb, want)
	}
	scoreProbesRuns(t, gguf, items)
}

// scoringInputs writes four generated documents (seed) and one probe item
// per type and level, for the scorers to read.
func scoringInputs(t *testing.T, seed int64) (docs []fresh.Document, data, items string) {
	t.Helper()
	dir := t.TempDir()
	docs = fresh.GenerateDocs(seed, 4, 100, 400)
	data = writeDocs(t, dir, docs)
	items = generateItems(t, dir, 1)
	return docs, data, items
}

// modelInfoSays runs `model info` and requires each of lines in its output.
func modelInfoSays(t *testing.T, gguf string, lines ...string) {
	t.Helper()
	e, stdout, stderr := freshTestEnv()
	if code := run(e, []string{"model", "info", gguf}); code != 0 {
		t.Fatalf("model info: exit %d: %s", code, stderr)
	}
	for _, want := range lines {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("model info lacks %q:\n%s", want, stdout)
		}
	}
}

// scoreFreshBPB runs `score fresh --json` with flags and returns its bits
// per byte.
func scoreFreshBPB(t *testing.T, gguf, data string, flags ...string) float64 {
	t.Helper()
	e, stdout, stderr := freshTestEnv()
	args := append([]string{"score", "fresh", "--model", gguf, "--data", data, "--out", filepath.Join(t.TempDir(), "fresh.jsonl"),
		"--threads", "1", "--json"}, flags...)
	if code := run(e, args); code != 0 {
		t.Fatalf("score fresh: exit %d: %s", code, stderr)
	}
	var sum fresh.Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("--json output %q: %v", stdout, err)
	}
	return sum.BPB
}

// scoreProbesRuns runs `score probes --json` and requires scored items.
func scoreProbesRuns(t *testing.T, gguf, items string) {
	t.Helper()
	e, stdout, stderr := freshTestEnv()
	if code := run(e, []string{"score", "probes", "--model", gguf, "--items", items, "--out", filepath.Join(t.TempDir(), "probes.jsonl"),
		"--threads", "1", "--json"}); code != 0 {
		t.Fatalf("score probes: exit %d: %s", code, stderr)
	}
	var ps probes.Summary
	if err := json.Unmarshal(stdout.Bytes(), &ps); err != nil || ps.Items == 0 {
		t.Fatalf("score probes --json %q: %v", stdout, err)
	}
}

// noBOSReferenceBPB is the bits per byte of docs, each scored whole from
// its first token (unscored, its bytes left out), by the float64 Falcon-H1
// reference on llama.cpp's token ids.
func noBOSReferenceBPB(t *testing.T, gguf string, c converttest.Checkpoint, docs []fresh.Document) float64 {
	t.Helper()
	m, err := llama.Load(gguf, llama.Options{Threads: 1, Context: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Info().HasBOS() {
		t.Fatalf("the converted model has BOS %d; its tokenizer has none", m.Info().BOS)
	}
	config, err := json.Marshal(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := testmodel.FalconH1Reference(config, c.Values())
	if err != nil {
		t.Fatal(err)
	}
	var bits float64
	var bytes int
	for _, doc := range docs {
		ids, err := m.Tokenize(doc.Text)
		if err != nil {
			t.Fatal(err)
		}
		first, err := m.TokenBytes(ids[0])
		if err != nil {
			t.Fatal(err)
		}
		res := llamatest.Score(t, ref, []runner.Request{llamatest.Whole(ids)})
		for _, lp := range res[0][0] {
			bits -= lp / math.Ln2
		}
		bytes += len(doc.Text) - len(first)
	}
	return bits / float64(bytes)
}
