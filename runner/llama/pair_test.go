//go:build cgo

package llama_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// pairOpts load both models of a pair alike. One thread: ggml's threads
// spin at barriers, which on an oversubscribed test machine costs a
// hundredfold.
var pairOpts = llama.Options{Threads: 1, Parallel: 8, Batch: 64}

// scorePair scores reqs on the pair of ref and art.
func scorePair(t *testing.T, ref, art *llama.Model, reqs []runner.Request) []runner.PairResult {
	t.Helper()
	pair, err := llama.NewPair(ref, art)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pair.ScorePair(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// pairRequests mixes whole sequences with probe-shaped requests (a shared
// prompt, several branches), so shared cells and packing are exercised.
func pairRequests() []runner.Request {
	reqs := llamatest.RandomSequences(5, 6, 120, 256, testmodel.BOS)
	return append(reqs, llamatest.ProbeLike(rand.New(rand.NewPCG(9, 9)), 8, testmodel.BOS)...)
}

// The engine's KL divergence and top-token agreement, computed from its
// two rows of logits at each position, equal a float64 computation from
// the two reference models' full distributions to 1e-6.
func TestPairKLMatchesFloat64(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The artifact is the reference with its logits jittered, so that at
	// some positions the top token changes and at most it does not.
	ref := testmodel.RandomBigram(21)
	table, rng := ref.Table(), rand.New(rand.NewPCG(22, 22))
	for _, row := range table {
		for j := range row {
			row[j] += 0.5 * rng.NormFloat64()
		}
	}
	art, err := testmodel.NewBigram(table)
	if err != nil {
		t.Fatal(err)
	}
	refPath, artPath := filepath.Join(dir, "ref.gguf"), filepath.Join(dir, "art.gguf")
	if err := testmodel.WriteBigramGGUF(refPath, ref); err != nil {
		t.Fatal(err)
	}
	if err := testmodel.WriteBigramGGUF(artPath, art); err != nil {
		t.Fatal(err)
	}
	reqs := pairRequests()
	got := scorePair(t, llamatest.Load(t, refPath, pairOpts), llamatest.Load(t, artPath, pairOpts), reqs)
	want, err := testmodel.RowPair{Ref: ref.Rows, Art: art.Rows}.ScorePair(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	var worstKL, worstLP float64
	positions, agree := 0, 0
	for i := range reqs {
		for b := range want[i].KL {
			for k := range want[i].KL[b] {
				worstKL = math.Max(worstKL, math.Abs(got[i].KL[b][k]-want[i].KL[b][k]))
				worstLP = math.Max(worstLP, math.Abs(got[i].Ref[b][k]-want[i].Ref[b][k]))
				worstLP = math.Max(worstLP, math.Abs(got[i].Art[b][k]-want[i].Art[b][k]))
				if got[i].SameTop[b][k] != want[i].SameTop[b][k] {
					t.Errorf("request %d branch %d read %d: same top %v, float64 says %v", i, b, k, got[i].SameTop[b][k], want[i].SameTop[b][k])
				}
				agree += int(want[i].SameTop[b][k])
				positions++
			}
		}
	}
	t.Logf("%d positions: worst KL error %.2g nats, worst log-probability error %.2g, %d with the same top token", positions, worstKL, worstLP, agree)
	if worstKL > 1e-6 {
		t.Errorf("KL differs from the float64 computation by up to %g nats, want <= 1e-6", worstKL)
	}
	if worstLP > 1e-4 {
		t.Errorf("log-probabilities differ from the bigrams' by up to %g", worstLP)
	}
	if agree == 0 || agree == positions {
		t.Errorf("%d of %d positions agree on the top token: the test needs both kinds", agree, positions)
	}
}

// The same holds for two tiny transformers with different random weights,
// to 1e-6 of the divergence where it exceeds a nat: these two differ by
// about 4 nats a token, and the float32 forward pass, not the reduction,
// moves their KL by up to ~1e-6 (2.7e-7 of it).
func TestPairKLMatchesFloat64Transformer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var paths [2]string
	var models [2]*testmodel.Llama
	for i, seed := range []int64{31, 32} {
		m, err := testmodel.RandomLlama(seed, testmodel.DefaultShape())
		if err != nil {
			t.Fatal(err)
		}
		paths[i], models[i] = filepath.Join(dir, fmt.Sprintf("m%d.gguf", i)), m
		if err := testmodel.WriteLlamaGGUF(paths[i], m); err != nil {
			t.Fatal(err)
		}
	}
	reqs := llamatest.RandomSequences(6, 2, 12, 256, testmodel.BOS)
	got := scorePair(t, llamatest.Load(t, paths[0], pairOpts), llamatest.Load(t, paths[1], pairOpts), reqs)
	vocab := testmodel.DefaultShape().Vocab
	want, err := testmodel.RowPair{Ref: testmodel.ScorerRows(models[0], vocab), Art: testmodel.ScorerRows(models[1], vocab)}.ScorePair(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	worst, n := 0.0, 0
	for i := range reqs {
		for k, w := range want[i].KL[0] {
			worst = math.Max(worst, math.Abs(got[i].KL[0][k]-w)/math.Max(1, w))
			if got[i].SameTop[0][k] != want[i].SameTop[0][k] {
				t.Errorf("request %d read %d: same top %v, float64 says %v", i, k, got[i].SameTop[0][k], want[i].SameTop[0][k])
			}
			if !(w > 0) {
				t.Errorf("request %d read %d: float64 KL %g of two different models", i, k, w)
			}
			n++
		}
	}
	t.Logf("%d positions: worst KL error %.2g of max(1 nat, KL) (KL of the first sequence %.3v)", n, worst, want[0].KL[0])
	if worst > 1e-6 {
		t.Errorf("KL differs from the float64 forward passes by up to %g of max(1 nat, KL), want <= 1e-6", worst)
	}
}

// The same file loaded twice diverges nowhere: KL exactly 0, the same top
// token everywhere, the same log-probabilities.
func TestPairIdenticalIsZero(t *testing.T) {
	t.Parallel()
	bp, _ := fixtures(t)
	a, b := llamatest.Load(t, bp, pairOpts), llamatest.Load(t, bp, pairOpts)
	if _, err := llama.NewPair(a, a); err == nil || !strings.Contains(err.Error(), "same loaded model") {
		t.Fatalf("pairing a model with itself: %v", err)
	}
	reqs := pairRequests()
	got := scorePair(t, a, b, reqs)
	plain, err := a.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		for br := range got[i].KL {
			for k := range got[i].KL[br] {
				if got[i].KL[br][k] != 0 || got[i].SameTop[br][k] != 1 || got[i].Ref[br][k] != got[i].Art[br][k] {
					t.Fatalf("request %d branch %d read %d: KL %g, same top %v, log-probabilities %g and %g",
						i, br, k, got[i].KL[br][k], got[i].SameTop[br][k], got[i].Ref[br][k], got[i].Art[br][k])
				}
				if math.Abs(got[i].Ref[br][k]-plain[i][br][k]) > 1e-6 {
					t.Fatalf("request %d branch %d read %d: paired %g, alone %g", i, br, k, got[i].Ref[br][k], plain[i][br][k])
				}
			}
		}
	}
}

func TestPairRefusesMismatch(t *testing.T) {
	t.Parallel()
	bp, tp := fixtures(t)
	a := llamatest.Load(t, bp, llama.Options{Threads: 1, Parallel: 8})
	b := llamatest.Load(t, bp, llama.Options{Threads: 1, Parallel: 4})
	if _, err := llama.NewPair(a, b); err == nil || !strings.Contains(err.Error(), "pack differently") {
		t.Errorf("different limits: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pair, err := llama.NewPair(a, llamatest.Load(t, bp, llama.Options{Threads: 1, Parallel: 8}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pair.ScorePair(ctx, pairRequests()); err != context.Canceled {
		t.Errorf("a cancelled context: %v", err)
	}
	c := llamatest.Load(t, tp, llama.Options{Threads: 1, Parallel: 8})
	if _, err := llama.NewPair(a, c); err != nil {
		// Same byte vocabulary: pairing is allowed; the tokenizers are the
		// audit's to compare.
		t.Errorf("same vocabulary, different models: %v", err)
	}
}

// llama.cpp's quantizer makes every offered type; the result loads, keeps
// the vocabulary and holds quantized tensors. Bad input is an error naming
// it, and nothing is left behind.
func TestQuantize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.gguf")
	if err := testmodel.WriteOutlierBigramGGUF(ref, testmodel.RandomBigram(3), []int32{'0'}, 1000); err != nil {
		t.Fatal(err)
	}
	for _, typ := range runner.QuantTypes {
		out := filepath.Join(dir, typ+".gguf")
		if err := llama.Quantize(ref, out, strings.ToUpper(typ), 2); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		info, err := runner.ReadInfo(out)
		if err != nil {
			t.Fatal(err)
		}
		// The file type llama.cpp records, not the type with the most
		// elements (a quantized file mixes types).
		if info.VocabSize != 257 || info.Dtype != strings.ToUpper(typ) {
			t.Errorf("%s: vocabulary %d, dtype %s, tensors %v", typ, info.VocabSize, info.Dtype, info.TensorTypes)
		}
		t.Logf("%s: %v", typ, info.TensorTypes)
	}
	if err := llama.Quantize(ref, filepath.Join(dir, "x.gguf"), "q3_K", 2); err == nil || !strings.Contains(err.Error(), "want one of") {
		t.Errorf("unknown type: %v", err)
	}
	missing := filepath.Join(dir, "missing.gguf")
	if err := llama.Quantize(missing, filepath.Join(dir, "y.gguf"), "q4_0", 2); err == nil || !strings.Contains(err.Error(), "missing.gguf") {
		t.Errorf("missing input: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "[xy].gguf*")); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
}
