//go:build cgo

package audit_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/converttest"

	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
	"github.com/udgamlabs/udgam-ci/runner/textprep"
)

func digits() []int32 {
	var ds []int32
	for d := '0'; d <= '9'; d++ {
		ds = append(ds, d)
	}
	return ds
}

// small keeps engine tests short on a shared 2-core machine: 40 items of
// each probe type (--sample keeps types in proportion), 12 documents.
func small(opt audit.Options) audit.Options {
	opt.Probes.Selection.Sample, opt.Probes.Selection.Seed = 280, 1
	opt.Fresh.Selection.Limit = 12
	return opt
}

// engineAudit audits the GGUF art against ref through llama.cpp.
func engineAudit(t *testing.T, ref, art string, opt audit.Options) *audit.Report {
	t.Helper()
	lo := llama.Options{Threads: 1, Context: 1024}
	r, a := llamatest.Load(t, ref, lo), llamatest.Load(t, art, lo)
	pair, err := llama.NewPair(r, a)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Run(context.Background(), audit.Models{Ref: r, Art: a, RawArt: a, Pair: pair}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// A reference whose digit rows carry an outlier llama.cpp's block
// quantizers cannot hold: quantized to q4_0 by llama.cpp itself, the
// numeric types lose items and are named first, the syllogisms (Yes/No,
// no digit) flip none, and the audit fails. The same file as its own
// artifact flips nothing and diverges nowhere.
func TestQuantizedPlantFound(t *testing.T) {
	t.Parallel()
	opt := small(options(t))
	dir := t.TempDir()
	ref := probeBigram(t, opt.Probes.Data)
	refPath, q4 := filepath.Join(dir, "ref.gguf"), filepath.Join(dir, "ref-q4_0.gguf")
	if err := testmodel.WriteOutlierBigramGGUF(refPath, ref, digits(), 1000); err != nil {
		t.Fatal(err)
	}
	if err := llama.Quantize(refPath, q4, "q4_0", 1); err != nil {
		t.Fatal(err)
	}
	same := engineAudit(t, refPath, refPath, opt)
	if same.KL.Mean != 0 || same.KL.Max != 0 || same.KL.SameTop != 1 || same.Probes.Flips.RightToWrong+same.Probes.Flips.WrongToRight != 0 || same.Verdict != audit.Pass {
		t.Errorf("identical artifact: KL %+v, flips %+v, verdict %s", same.KL, same.Probes.Flips, same.Verdict)
	}

	opt.Dir = t.TempDir()
	r := engineAudit(t, refPath, q4, opt)
	t.Logf("q4_0 (%s): accuracy %.1f -> %.1f, bpb %.4f -> %.4f, KL mean %.4f p99 %.4f same top %.3f",
		r.Artifact.Dtype, r.Probes.Base, r.Probes.Head, r.Fresh.Base, r.Fresh.Head, r.KL.Mean, r.KL.P99, r.KL.SameTop)
	if r.Verdict != audit.Fail || !(r.KL.Mean > 0) || r.Artifact.Dtype == r.Reference.Dtype {
		t.Errorf("q4_0 artifact: verdict %s, KL %+v, dtypes %s and %s", r.Verdict, r.KL, r.Reference.Dtype, r.Artifact.Dtype)
	}
	for _, tf := range r.Types {
		t.Logf("%-12s %5.1f -> %5.1f  right->wrong %3d wrong->right %3d worse %v", tf.Type, tf.Base, tf.Head, tf.Flips.RightToWrong, tf.Flips.WrongToRight, tf.Worse)
		if tf.Type == "syllogism" && (tf.Flips.RightToWrong+tf.Flips.WrongToRight != 0 || tf.Worse) {
			t.Errorf("syllogism flips without a digit: %+v", tf.Flips)
		}
	}
	if first := r.Types[0]; !first.Worse || first.Type == "syllogism" || first.Type == "compare" && first.Flips.RightToWrong == 0 {
		t.Errorf("first type %s: %+v", first.Type, first.Result)
	}
	checkSurfaces(t, r)
}

// Real quantizations of a random tiny transformer by llama.cpp: every
// type udgam-ci offers loads, scores, and diverges from the reference
// (KL > 0, finite), more bits diverging less than q4_0's.
func TestQuantizeTypesAudit(t *testing.T) {
	t.Parallel()
	opt := small(options(t))
	m, err := testmodel.RandomLlama(5, testmodel.DefaultShape())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ref := filepath.Join(dir, "tiny.gguf")
	if err := testmodel.WriteLlamaGGUF(ref, m); err != nil {
		t.Fatal(err)
	}
	kl := map[string]float64{}
	for _, typ := range []string{"q8_0", "q4_0"} {
		out := filepath.Join(dir, "tiny-"+typ+".gguf")
		if err := llama.Quantize(ref, out, typ, 1); err != nil {
			t.Fatal(err)
		}
		opt.Dir = t.TempDir()
		opt.Quantized = typ
		r := engineAudit(t, ref, out, opt)
		t.Logf("%s: bpb %+.4f %v, accuracy %+.1f, KL mean %.3g p99 %.3g, same top %.3f, flips %+v",
			typ, r.Fresh.Delta, r.Fresh.CI, r.Probes.Delta, r.KL.Mean, r.KL.P99, r.KL.SameTop, *r.Probes.Flips)
		if !(r.KL.Mean > 0) || math.IsInf(r.KL.Max, 0) || r.KL.Tokens == 0 {
			t.Errorf("%s: KL %+v", typ, r.KL)
		}
		kl[typ] = r.KL.Mean
	}
	if !(kl["q8_0"] < kl["q4_0"]) {
		t.Errorf("KL q8_0 %g, q4_0 %g: eight bits should diverge less than four", kl["q8_0"], kl["q4_0"])
	}
}

// A checkpoint converted by udgam-ci and quantized to q4_0 by llama.cpp,
// audited as the command line does it (each model wrapped with its text
// preparation, the artifact's Fresh Text run paired through the wrapper):
// the divergence is positive and finite, the top token sometimes changes,
// and both runs record the same text preparation.
func TestConvertedCheckpointQ4(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ckpt")
	if _, err := converttest.Small.Write(ckpt); err != nil {
		t.Fatal(err)
	}
	ref, q4 := filepath.Join(dir, "small.gguf"), filepath.Join(dir, "small-q4_0.gguf")
	if _, err := convert.Convert(os.DirFS(ckpt), ref, convert.Options{Dtype: "f32"}); err != nil {
		t.Fatal(err)
	}
	if err := llama.Quantize(ref, q4, "q4_0", 1); err != nil {
		t.Fatal(err)
	}
	lo := llama.Options{Threads: 1, Context: 1024}
	wrap := func(m runner.Model) (runner.Model, error) { return textprep.WrapModel(m) }
	r, a := llamatest.Load(t, ref, lo), llamatest.Load(t, q4, lo)
	pair, err := llama.NewPair(r, a)
	if err != nil {
		t.Fatal(err)
	}
	wr, err := wrap(r)
	if err != nil {
		t.Fatal(err)
	}
	wa, err := wrap(a)
	if err != nil {
		t.Fatal(err)
	}
	opt := small(options(t))
	rep, err := audit.Run(context.Background(), audit.Models{Ref: wr, Art: wa, RawArt: a, Pair: pair, Wrap: wrap}, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("converted q4_0: bpb %+.4f %v, accuracy %+.1f, KL mean %.3g p99 %.3g max %.3g, same top %.3f over %d tokens",
		rep.Fresh.Delta, rep.Fresh.CI, rep.Probes.Delta, rep.KL.Mean, rep.KL.P99, rep.KL.Max, rep.KL.SameTop, rep.KL.Tokens)
	if !(rep.KL.Mean > 0) || math.IsInf(rep.KL.Max, 0) || !(rep.KL.SameTop < 1) || rep.Artifact.Dtype != "Q4_0" {
		t.Errorf("report %+v, artifact %+v", rep.KL, rep.Artifact)
	}
	if rep.Fresh.BaseRun.Records != rep.Fresh.HeadRun.Records || len(rep.Fresh.SettingsDiff) == 0 {
		t.Errorf("fresh runs: %+v vs %+v, settings diff %v", rep.Fresh.BaseRun, rep.Fresh.HeadRun, rep.Fresh.SettingsDiff)
	}
	for _, d := range rep.Fresh.SettingsDiff {
		if d.Judged && d.Key != "dtype" {
			t.Errorf("judged setting %s differs", d.Key)
		}
	}
}
