// Package audit compares the artifact a project ships (a quantized GGUF,
// say) with the full-precision reference it was made from, on both tests
// with the same settings: the paired change of bits per byte and of
// accuracy, the per-token KL divergence of the artifact from the reference
// on Fresh Text, and the Probe Suite items that flip, by type and level,
// judged against Limits.
package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// Models are the two sides of an audit.
type Models struct {
	// Ref and Art are the reference and the artifact as the tests score
	// them (the command line wraps each with its text preparation).
	Ref, Art runner.Model
	// RawArt is the artifact before wrapping, and Pair scores both models
	// in lockstep (runner/llama.Pair).
	RawArt runner.Model
	Pair   runner.PairScorer
	// Wrap gives a model the same wrapping as Art (nil: none), so the
	// artifact's Fresh Text run, scored through Pair, prepares text and
	// records its settings exactly as Art would.
	Wrap func(runner.Model) (runner.Model, error)
}

// Options are one audit's settings; the tests' options are templates whose
// Out is set here, and both models get the same.
type Options struct {
	Fresh   fresh.RunOptions
	Probes  probes.RunOptions
	Dir     string // the four run files go here
	Compare compare.Options
	Limits  Limits
	// Quantized names the quantization type when udgam-ci made the
	// artifact from the reference itself.
	Quantized string
	// Progress gets a line as each of the four runs starts (nil: none).
	Progress io.Writer
}

// Run files an audit writes in Options.Dir.
const (
	RefFreshFile  = "reference-fresh.jsonl"
	ArtFreshFile  = "artifact-fresh.jsonl"
	RefProbesFile = "reference-probes.jsonl"
	ArtProbesFile = "artifact-probes.jsonl"
)

// Run scores both models on both tests and judges the artifact. The
// reference is scored alone; the artifact's Fresh Text run goes through
// the pair scorer, which computes the reference's distribution beside it
// to measure the divergence, so Fresh Text costs three model passes.
func Run(ctx context.Context, m Models, opt Options) (*Report, error) {
	if m.Ref == nil || m.Art == nil || m.RawArt == nil || m.Pair == nil {
		return nil, errors.New("audit: both models and a pair scorer are needed")
	}
	ri, ai := m.Ref.Info(), m.Art.Info()
	// By what tokenizes, field by field, so that a file another converter
	// made from the same checkpoint passes.
	if d := runner.TokenizerDiff(ri, ai); len(d) > 0 {
		return nil, fmt.Errorf("audit: artifact %s has another tokenizer than reference %s: they differ in %s (reference first); the reference has %d tokens, the artifact %d; it is not an artifact of this model",
			ai.Path, ri.Path, strings.Join(d, ", "), ri.VocabSize, ai.VocabSize)
	}
	acc := &klAcc{}
	var pairArt runner.Model = &klModel{Model: m.RawArt, pair: m.Pair, acc: acc}
	if m.Wrap != nil {
		var err error
		if pairArt, err = m.Wrap(pairArt); err != nil {
			return nil, fmt.Errorf("audit: artifact %s: %w", ai.Path, err)
		}
	}

	fo := func(name string) fresh.RunOptions {
		o := opt.Fresh
		o.Out, o.Resume = filepath.Join(opt.Dir, name), false
		return o
	}
	po := func(name string) probes.RunOptions {
		o := opt.Probes
		o.Out, o.Resume = filepath.Join(opt.Dir, name), false
		return o
	}
	step := func(what string) {
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "audit: %s\n", what)
		}
	}
	step("Fresh Text, reference " + ri.Path)
	refFresh, err := fresh.Run(ctx, m.Ref, fo(RefFreshFile))
	if err != nil {
		return nil, fmt.Errorf("audit: reference fresh text: %w", err)
	}
	step("Fresh Text, artifact " + ai.Path + " beside the reference (KL divergence)")
	artFresh, err := fresh.Run(ctx, pairArt, fo(ArtFreshFile))
	if err != nil {
		return nil, fmt.Errorf("audit: artifact fresh text: %w", err)
	}
	step("Probe Suite, reference")
	refProbes, err := probes.Run(ctx, m.Ref, po(RefProbesFile))
	if err != nil {
		return nil, fmt.Errorf("audit: reference probes: %w", err)
	}
	step("Probe Suite, artifact")
	artProbes, err := probes.Run(ctx, m.Art, po(ArtProbesFile))
	if err != nil {
		return nil, fmt.Errorf("audit: artifact probes: %w", err)
	}
	return Judge(refFresh.Run, artFresh.Run, refProbes.Run, artProbes.Run, acc.summary(), opt)
}

// Judge compares the four runs and the divergences into a Report.
func Judge(refFresh, artFresh, refProbes, artProbes *runfile.Run, kl KL, opt Options) (*Report, error) {
	co := opt.Compare
	co.ByLevel = true
	// The dtype and the file differ by design; every other judged
	// setting must not, and is checked below.
	co.AllowSettingsMismatch = true
	fc, err := compare.Runs(refFresh, artFresh, co)
	if err != nil {
		return nil, fmt.Errorf("audit: compare fresh text: %w", err)
	}
	pc, err := compare.Runs(refProbes, artProbes, co)
	if err != nil {
		return nil, fmt.Errorf("audit: compare probes: %w", err)
	}
	for _, c := range []*compare.Comparison{fc, pc} {
		for _, d := range c.SettingsDiff {
			if d.Refuses() && d.Key != "dtype" {
				return nil, fmt.Errorf("audit: the %s runs differ in %s (%s vs %s); an audit scores both models with the same settings",
					c.Test, d.Key, d.Base, d.Head)
			}
		}
	}
	r := &Report{
		Git:       refFresh.Header.Git,
		Reference: side(refFresh.Header),
		Artifact:  side(artFresh.Header),
		Quantized: opt.Quantized,
		Fresh:     fc,
		Probes:    pc,
		KL:        kl,
		Limits:    opt.Limits,
		Types:     typeFlips(pc),
	}
	r.Verdict, r.Reasons = verdict(fc, pc, opt.Limits)
	return r, nil
}

// Side names one model of the audit.
type Side struct {
	Name     string `json:"name"`
	Revision string `json:"revision,omitempty"`
	File     string `json:"file"`
	SHA256   string `json:"sha256"`
	Dtype    string `json:"dtype"`
}

func side(h runfile.Header) Side {
	return Side{Name: h.Model.Name, Revision: h.Model.Revision, File: h.Model.File, SHA256: h.Model.SHA256, Dtype: h.Settings.Dtype}
}

// Report is an audit's outcome; its JSON is `audit artifact --json`, and
// what `audit push` and the Action upload to the report server.
type Report struct {
	// Git is the commit the audit belongs to (the reference's runs'), so
	// the report server files it beside that commit's runs.
	Git       runfile.Git `json:"git"`
	Reference Side        `json:"reference"`
	Artifact  Side        `json:"artifact"`
	Quantized string      `json:"quantized,omitempty"`
	// Fresh and Probes are the paired comparisons, reference as base and
	// artifact as head: Delta is artifact minus reference.
	Fresh  *compare.Comparison `json:"fresh"`
	Probes *compare.Comparison `json:"probes"`
	KL     KL                  `json:"kl"`
	// Types holds the Probe Suite flips by type, the types where the
	// artifact is significantly worse first.
	Types   []TypeFlips `json:"types"`
	Limits  Limits      `json:"limits"`
	Verdict Verdict     `json:"verdict"`
	Reasons []string    `json:"reasons,omitempty"`
	// Claimed, set only by a report server, keeps the uploader's limits
	// and verdict when the server judged under its own (Rejudge).
	Claimed *Claim `json:"claimed,omitempty"`
	// Verified, set only by a report server, names the run files
	// (RunFileNames) whose records it found scored the same in its stored
	// runs of the same model file and settings; the others' scores are
	// the uploader's.
	Verified []string `json:"verified,omitempty"`
}

// TypeFlips is one probe type's paired change and flips, with its levels.
type TypeFlips struct {
	Type string `json:"type"`
	compare.Result
	Worse  bool         `json:"worse"` // significantly worse
	Levels []LevelFlips `json:"levels"`
}

// LevelFlips is one type/level's paired change and flips.
type LevelFlips struct {
	Level string `json:"level"` // "type/level"
	compare.Result
}

// typeFlips orders the types: significantly worse first, then by change
// of accuracy, most lost first.
func typeFlips(pc *compare.Comparison) []TypeFlips {
	var out []TypeFlips
	for t, r := range pc.ByGroup {
		tf := TypeFlips{Type: t, Result: *r, Worse: r.Significant && r.Verdict == compare.Regressed}
		for l, lr := range pc.ByLevel {
			if typ, _, ok := cutLevel(l); ok && typ == t {
				tf.Levels = append(tf.Levels, LevelFlips{Level: l, Result: *lr})
			}
		}
		slices.SortFunc(tf.Levels, func(a, b LevelFlips) int { return cmp.Compare(a.Level, b.Level) })
		out = append(out, tf)
	}
	slices.SortFunc(out, func(a, b TypeFlips) int {
		if a.Worse != b.Worse {
			if a.Worse {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.Delta, b.Delta), cmp.Compare(a.Type, b.Type))
	})
	return out
}

// cutLevel splits a compare ByLevel key "type/level".
func cutLevel(key string) (typ, level string, ok bool) {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", "", false
}

// Verdict is an audit's conclusion.
type Verdict string

// Verdicts.
const (
	Pass Verdict = "pass" // within the limits
	Fail Verdict = "fail" // a limit exceeded
)

// verdict fails the artifact when it loses more than a limit allows and
// the loss is significant: bits per byte up by more than Limits.BPB with
// the interval above zero, or accuracy down by more than Limits.Accuracy
// points with the interval below zero.
func verdict(fc, pc *compare.Comparison, l Limits) (Verdict, []string) {
	var reasons []string
	if fc.Delta > l.BPB && fc.CI[0] > 0 && !fc.TooFew {
		reasons = append(reasons, fmt.Sprintf("bits per byte changed by %s (95%% interval %s), a rise of more than the %g allowed",
			report.FormatDelta(fc.Metric, fc.Delta), report.FormatCI(fc.Metric, fc.CI), l.BPB))
	}
	if -pc.Delta > l.Accuracy && pc.CI[1] < 0 && !pc.TooFew {
		reasons = append(reasons, fmt.Sprintf("accuracy changed by %s points (95%% interval %s), a drop of more than the %g allowed",
			report.FormatDelta(pc.Metric, pc.Delta), report.FormatCI(pc.Metric, pc.CI), l.Accuracy))
	}
	if len(reasons) > 0 {
		return Fail, reasons
	}
	return Pass, nil
}
