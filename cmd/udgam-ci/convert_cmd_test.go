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

// TestConvertedModelsScore converts a tiny checkpoint of each llama-family
// class with `model convert`, describes it with `model info`, and scores it
// with `score fresh` (whose bits per byte must equal the float64
// reference's on the same tokens) and `score probes`.
func TestConvertedModelsScore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := fresh.GenerateDocs(3, 4, 100, 400)
	data := writeDocs(t, dir, docs)
	items := generateItems(t, dir, 1)
	qwen3 := converttest.TinyDecoder()
	qwen3.QKNorm, qwen3.HeadDim, qwen3.Tied = true, 32, true
	qwen2 := converttest.TinyDecoder()
	qwen2.QKVBias = true
	for _, d := range []converttest.Decoder{
		{Class: "LlamaForCausalLM", ModelType: "llama", Model: converttest.TinyDecoder(), Dtype: "BF16", Seed: 11},
		{Class: "Qwen2ForCausalLM", ModelType: "qwen2", Model: qwen2, Dtype: "BF16", Seed: 12},
		{Class: "Qwen3ForCausalLM", ModelType: "qwen3", Model: qwen3, Dtype: "BF16", Seed: 13},
	} {
		t.Run(d.Class, func(t *testing.T) {
			checkConvertedScores(t, d.Checkpoint(), d.Model.Reference, docs, data, items)
		})
	}
}

// expected says what checkConvertedScores requires beyond the defaults.
type expected struct {
	Info   []string // lines of `model info`; a two-layer transformer's when nil
	BPBTol float64  // relative difference of bits per byte allowed; 1e-6 when 0
}

// checkConvertedScores writes checkpoint c as pytorch_model.bin in a
// subfolder, converts it with `model convert`, describes it with `model
// info`, scores docs (written to data) with `score fresh`, whose bits per
// byte must equal ref's on the same tokens, and items with `score probes`.
func checkConvertedScores(t *testing.T, c converttest.Checkpoint, ref func(map[string][]float32) (*testmodel.Reference, error), docs []fresh.Document, data, items string, want ...expected) {
	t.Helper()
	ckpt := filepath.Join(t.TempDir(), "repo")
	if err := c.Write(filepath.Join(ckpt, "final"), converttest.Torch); err != nil {
		t.Fatal(err)
	}
	gguf := filepath.Join(t.TempDir(), "m.gguf")
	e, stdout, stderr := freshTestEnv()
	if code := run(e, []string{"model", "convert", ckpt, "--subfolder", "final", "--out", gguf}); code != 0 {
		t.Fatalf("model convert: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout.String(), "from pytorch") {
		t.Errorf("model convert said %q", stdout)
	}
	e, stdout, stderr = freshTestEnv()
	if code := run(e, []string{"model", "info", gguf}); code != 0 {
		t.Fatalf("model info: exit %d: %s", code, stderr)
	}
	// A converted GGUF has no general.name: info shows the name runs record.
	if !strings.Contains(stdout.String(), "name              m.gguf (the GGUF has no general.name") {
		t.Errorf("model info shows no name:\n%s", stdout)
	}
	exp := expected{Info: []string{"family            transformer", "layers            2 x attention"}, BPBTol: 1e-6}
	if len(want) > 0 {
		if want[0].Info != nil {
			exp.Info = want[0].Info
		}
		if want[0].BPBTol > 0 {
			exp.BPBTol = want[0].BPBTol
		}
	}
	for _, want := range exp.Info {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("model info lacks %q:\n%s", want, stdout)
		}
	}

	e, stdout, stderr = freshTestEnv()
	if code := run(e, []string{"score", "fresh", "--model", gguf, "--data", data, "--out", filepath.Join(t.TempDir(), "fresh.jsonl"),
		"--add-bos", "yes", "--window", "512", "--stride", "256", "--threads", "1", "--json"}); code != 0 {
		t.Fatalf("score fresh: exit %d: %s", code, stderr)
	}
	var sum fresh.Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("--json output %q: %v", stdout, err)
	}
	bpb := referenceBPB(t, gguf, ref, c, docs)
	t.Logf("score fresh: bpb %.9f, float64 reference %.9f", sum.BPB, bpb)
	if math.Abs(sum.BPB-bpb) > exp.BPBTol*bpb {
		t.Errorf("score fresh: bpb %.9f, float64 reference %.9f (relative difference at most %g)", sum.BPB, bpb, exp.BPBTol)
	}

	e, stdout, stderr = freshTestEnv()
	if code := run(e, []string{"score", "probes", "--model", gguf, "--items", items, "--out", filepath.Join(t.TempDir(), "probes.jsonl"),
		"--threads", "1", "--json"}); code != 0 {
		t.Fatalf("score probes: exit %d: %s", code, stderr)
	}
	var ps probes.Summary
	if err := json.Unmarshal(stdout.Bytes(), &ps); err != nil || ps.Items == 0 {
		t.Fatalf("score probes --json %q: %v", stdout, err)
	}
}

// referenceBPB is the bits per byte of docs, each scored whole after BOS,
// by the checkpoint's float64 forward pass on llama.cpp's token ids.
func referenceBPB(t *testing.T, gguf string, reference func(map[string][]float32) (*testmodel.Reference, error), c converttest.Checkpoint, docs []fresh.Document) float64 {
	t.Helper()
	m, err := llama.Load(gguf, llama.Options{Threads: 1, Context: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ref, err := reference(c.Values())
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
		res := llamatest.Score(t, ref, []runner.Request{llamatest.Whole(append([]int32{m.Info().BOS}, ids...))})
		for _, lp := range res[0][0] {
			bits -= lp / math.Ln2
		}
		bytes += len(doc.Text)
	}
	return bits / float64(bytes)
}
