package main

import (
	"bytes"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
)

// The demo scores the core set and the smoke sample: neither may be in the
// text the models learn from.
func TestTrainingTextHoldsNoScoredData(t *testing.T) {
	t.Parallel()
	text, st, err := trainingText()
	if err != nil {
		t.Fatal(err)
	}
	if st.Questions == 0 || st.ProseBytes == 0 || st.ProseBytes+st.QuestionBytes != len(text) {
		t.Fatalf("stats %+v do not add up to the %d bytes of text", st, len(text))
	}
	core, err := probes.Core()
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range core.Items {
		// Prompts run from "Question: " to "Answer:", so a match is the
		// whole question, not part of a longer one.
		if bytes.Contains(text, []byte(it.Prompt)) {
			t.Errorf("training text holds core item %s: %q", it.ID, it.Prompt)
		}
	}
	smoke, err := fresh.Smoke()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range smoke.Docs {
		for _, line := range strings.Split(d.Text, "\n") {
			if len(line) >= 40 && bytes.Contains(text, []byte(line)) {
				t.Errorf("training text holds a line of smoke document %s: %q", d.ID, line)
			}
		}
	}
}

// The demo's point: the candidate predicts unseen text better than the
// baseline, in total and on the English prose and technical sources.
func TestCandidatePredictsSmokeSampleBetter(t *testing.T) {
	t.Parallel()
	text, _, err := trainingText()
	if err != nil {
		t.Fatal(err)
	}
	smoke, err := fresh.Smoke()
	if err != nil {
		t.Fatal(err)
	}
	var bpb []map[string]float64 // per model: source -> bits per byte, "" = all
	for _, m := range demoModels(text) {
		b, err := testmodel.FitBigram(m.text, alpha)
		if err != nil {
			t.Fatal(err)
		}
		bpb = append(bpb, bitsPerByte(b, smoke.Docs))
	}
	base, cand := bpb[0], bpb[1]
	for _, src := range []string{"", "smoke-prose", "smoke-tech"} {
		if !(cand[src] < base[src]) {
			t.Errorf("source %q: candidate %.4f bpb, baseline %.4f: want the candidate lower", src, cand[src], base[src])
		}
	}
}

func bitsPerByte(b *testmodel.Bigram, docs []fresh.Document) map[string]float64 {
	bits, size := map[string]float64{}, map[string]int{}
	for _, d := range docs {
		prev := testmodel.BOS
		var sum float64
		for _, c := range []byte(d.Text) {
			sum -= b.LogProb(prev, int32(c)) / math.Ln2
			prev = int32(c)
		}
		for _, k := range []string{"", d.Source} {
			bits[k] += sum
			size[k] += len(d.Text)
		}
	}
	out := map[string]float64{}
	for k := range bits {
		out[k] = bits[k] / float64(size[k])
	}
	return out
}

func TestRunWritesTwoModels(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := run(dir, 0, io.Discard); err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for _, f := range []string{"baseline.gguf", "candidate.gguf"} {
		info, err := runner.ReadInfo(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if info.Name != modelName || info.VocabSize != testmodel.ByteVocab || info.BOS != testmodel.BOS {
			t.Errorf("%s: name %q, vocab %d, BOS %d; want %q, %d, %d", f, info.Name, info.VocabSize, info.BOS, modelName, testmodel.ByteVocab, testmodel.BOS)
		}
		hashes = append(hashes, info.SHA256)
	}
	if hashes[0] == hashes[1] {
		t.Error("baseline and candidate are the same file")
	}
}
