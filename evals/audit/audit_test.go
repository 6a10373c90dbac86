package audit_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runner"
)

// probeBigram is a byte bigram fitted on the core Probe Suite's prompts and
// right answers: a reference that gets more items right than chance, so
// an artifact has rights to lose.
func probeBigram(t *testing.T, set *probes.Set) *testmodel.Bigram {
	t.Helper()
	var sb strings.Builder
	for _, it := range set.Items {
		sb.WriteString(it.Prompt + " " + it.Answer + "\n")
	}
	b, err := testmodel.FitBigram([]byte(sb.String()), 0.01)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// digitsBlind is ref with the digits made equally likely after ' ', the
// digits and the punctuation between (previous bytes 32..63): the damage
// the outlier plant makes llama.cpp's quantizer do (testmodel.
// WriteOutlierBigramGGUF), written here in float64.
func digitsBlind(t *testing.T, ref *testmodel.Bigram) *testmodel.Bigram {
	t.Helper()
	table := ref.Table()
	for prev := 32; prev < 64; prev++ {
		for d := '0'; d <= '9'; d++ {
			table[prev][d] = 0
		}
	}
	b, err := testmodel.NewBigram(table)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func options(t *testing.T) audit.Options {
	t.Helper()
	docs, err := fresh.Smoke()
	if err != nil {
		t.Fatal(err)
	}
	set, err := probes.Core()
	if err != nil {
		t.Fatal(err)
	}
	h := evals.HeaderOptions{ModelName: "bigram"}
	return audit.Options{
		Fresh:   fresh.RunOptions{RunCommon: evals.RunCommon{BOSMode: "yes", Header: h}, Data: docs, Window: 256, Stride: 128},
		Probes:  probes.RunOptions{RunCommon: evals.RunCommon{BOSMode: "yes", Header: h}, Data: set},
		Dir:     t.TempDir(),
		Compare: compare.Options{Resamples: 1000},
		Limits:  audit.DefaultLimits,
	}
}

func runAudit(t *testing.T, ref, art *testmodel.Bigram, opt audit.Options) *audit.Report {
	t.Helper()
	r, err := audit.Run(context.Background(), audit.Models{Ref: ref, Art: art, RawArt: art,
		Pair: testmodel.RowPair{Ref: ref.Rows, Art: art.Rows}}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// An artifact identical to the reference: no flips, KL 0, every token's
// top agreeing, no change, a pass.
func TestIdenticalArtifact(t *testing.T) {
	t.Parallel()
	opt := options(t)
	ref := probeBigram(t, opt.Probes.Data)
	r := runAudit(t, ref, ref, opt)
	if r.KL.Tokens == 0 || r.KL.Mean != 0 || r.KL.P99 != 0 || r.KL.Max != 0 || r.KL.SameTop != 1 {
		t.Errorf("KL %+v, want zero divergence over some tokens", r.KL)
	}
	f := r.Probes.Flips
	if f == nil || f.RightToWrong != 0 || f.WrongToRight != 0 || f.BothRight == 0 {
		t.Errorf("flips %+v, want none and some items right", f)
	}
	if r.Fresh.Delta != 0 || r.Probes.Delta != 0 || r.Verdict != audit.Pass || len(r.Reasons) != 0 {
		t.Errorf("delta bpb %g, accuracy %g, verdict %s %v", r.Fresh.Delta, r.Probes.Delta, r.Verdict, r.Reasons)
	}
	for _, tf := range r.Types {
		if tf.Worse || tf.Flips.RightToWrong+tf.Flips.WrongToRight != 0 {
			t.Errorf("type %s: %+v", tf.Type, tf)
		}
	}
	checkSurfaces(t, r)
}

// An artifact blind to digits: the numeric types lose items and are named
// first, the syllogisms (Yes/No) flip none, the divergence is positive,
// the audit fails on accuracy.
func TestDigitDamageNamedFirst(t *testing.T) {
	t.Parallel()
	opt := options(t)
	ref := probeBigram(t, opt.Probes.Data)
	r := runAudit(t, ref, digitsBlind(t, ref), opt)
	t.Logf("accuracy %.1f -> %.1f, bpb %.4f -> %.4f, KL mean %.4f p99 %.4f same top %.3f",
		r.Probes.Base, r.Probes.Head, r.Fresh.Base, r.Fresh.Head, r.KL.Mean, r.KL.P99, r.KL.SameTop)
	if r.Verdict != audit.Fail || len(r.Reasons) == 0 {
		t.Errorf("verdict %s %v, want fail", r.Verdict, r.Reasons)
	}
	if !(r.KL.Mean > 0 && r.KL.P99 >= r.KL.Mean && r.KL.SameTop < 1) {
		t.Errorf("KL %+v", r.KL)
	}
	seenSafe := false
	for i, tf := range r.Types {
		t.Logf("%-12s %5.1f -> %5.1f  right->wrong %3d wrong->right %3d worse %v", tf.Type, tf.Base, tf.Head, tf.Flips.RightToWrong, tf.Flips.WrongToRight, tf.Worse)
		if tf.Type == "syllogism" {
			seenSafe = true
			if tf.Flips.RightToWrong+tf.Flips.WrongToRight != 0 || tf.Worse {
				t.Errorf("syllogism flips without a digit: %+v", tf.Flips)
			}
			continue
		}
		if tf.Worse && seenSafe {
			t.Errorf("type %s is significantly worse but listed after syllogism (position %d)", tf.Type, i)
		}
		if len(tf.Levels) == 0 {
			t.Errorf("type %s: no levels", tf.Type)
		}
	}
	if !r.Types[0].Worse || r.Types[0].Flips.RightToWrong == 0 {
		t.Errorf("first type %+v, want a significantly worse one", r.Types[0])
	}
	checkSurfaces(t, r)
}

// checkSurfaces renders the report on every surface and checks that each
// shows the same numbers and the verdict.
func checkSurfaces(t *testing.T, r *audit.Report) {
	t.Helper()
	var text, md strings.Builder
	if err := audit.RenderText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := audit.RenderMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	first := r.Types[0]
	for _, want := range []string{
		report.FormatDelta(compare.MetricBPB, r.Fresh.Delta),
		report.FormatCI(compare.MetricAccuracy, r.Probes.CI),
		report.FormatDelta(compare.MetricAccuracy, first.Delta),
		"Verdict: " + map[audit.Verdict]string{audit.Pass: "pass", audit.Fail: "FAIL"}[r.Verdict],
	} {
		if !strings.Contains(text.String(), want) || !strings.Contains(md.String(), want) {
			t.Errorf("%q missing from the text or the Markdown:\n%s\n%s", want, text.String(), md.String())
		}
	}
	// The first type of the table is the first type listed.
	if i, j := strings.Index(md.String(), "| "+first.Type+" |"), strings.Index(md.String(), "| syllogism |"); i < 0 || j < 0 || i > j {
		t.Errorf("type %s is not listed before syllogism:\n%s", first.Type, md.String())
	}
	var back map[string]any
	if err := json.Unmarshal(js, &back); err != nil || back["verdict"] != string(r.Verdict) {
		t.Errorf("JSON verdict %v, %v", back["verdict"], err)
	}
	t.Log("\n" + text.String())
}

func TestParseLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want audit.Limits
		err  string
	}{
		{"", audit.DefaultLimits, ""},
		{"bpb=0.05", audit.Limits{BPB: 0.05, Accuracy: audit.DefaultLimits.Accuracy}, ""},
		{"accuracy=1, bpb=0", audit.Limits{BPB: 0, Accuracy: 1}, ""},
		{"kl=1", audit.Limits{}, "unknown key"},
		{"bpb", audit.Limits{}, "not key=value"},
		{"bpb=-1", audit.Limits{}, "not a number >= 0"},
		{"accuracy=x", audit.Limits{}, "not a number >= 0"},
	} {
		got, err := audit.ParseLimits(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if back, err := audit.ParseLimits(got.String()); err != nil || back != got {
			t.Errorf("%q: String %q reads back as %+v, %v", c.in, got.String(), back, err)
		}
	}
}

// An artifact with another tokenizer is not an artifact of the reference:
// refused before anything is scored, naming the fields that differ.
func TestOtherTokenizerRefused(t *testing.T) {
	t.Parallel()
	opt := options(t)
	ref := testmodel.RandomBigram(1)
	shape := testmodel.DefaultShape()
	shape.Vocab = 300
	other, err := testmodel.RandomLlama(2, shape)
	if err != nil {
		t.Fatal(err)
	}
	_, err = audit.Run(context.Background(), audit.Models{Ref: ref, Art: other, RawArt: other,
		Pair: testmodel.RowPair{Ref: ref.Rows, Art: ref.Rows}}, opt)
	// The refusal names the fields that differ (issue 40).
	if err == nil || !strings.Contains(err.Error(), "another tokenizer") || !strings.Contains(err.Error(), "vocabulary") {
		t.Fatalf("err %v", err)
	}
	if files, _ := filepath.Glob(filepath.Join(opt.Dir, "*")); len(files) != 0 {
		t.Errorf("wrote %v before refusing", files)
	}
}

// brokenPair reports a negative divergence, which no pair of distributions
// has: the audit stops with an error rather than average it in.
type brokenPair struct{ testmodel.RowPair }

func (b brokenPair) ScorePair(ctx context.Context, reqs []runner.Request) ([]runner.PairResult, error) {
	res, err := b.RowPair.ScorePair(ctx, reqs)
	if err == nil && len(res) > 0 && len(res[0].KL) > 0 && len(res[0].KL[0]) > 0 {
		res[0].KL[0][0] = -0.5
	}
	return res, err
}

func TestNegativeDivergenceRefused(t *testing.T) {
	t.Parallel()
	opt := options(t)
	opt.Fresh.Selection.Limit, opt.Probes.Selection.Limit = 12, 20
	ref := testmodel.RandomBigram(1)
	_, err := audit.Run(context.Background(), audit.Models{Ref: ref, Art: ref, RawArt: ref,
		Pair: brokenPair{testmodel.RowPair{Ref: ref.Rows, Art: ref.Rows}}}, opt)
	if err == nil || !strings.Contains(err.Error(), "is not a divergence") {
		t.Fatalf("err %v", err)
	}
}
