package audit

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// RunFiles are an audit's four runs, as Run writes them in Options.Dir:
// what a report server recomputes an audit's figures from.
type RunFiles struct {
	RefFresh, ArtFresh, RefProbes, ArtProbes *runfile.Run
}

// RunFileNames are the four runs' files in the order of RunFiles' fields,
// also the names of their parts in an upload (without ".jsonl").
var RunFileNames = [4]string{RefFreshFile, ArtFreshFile, RefProbesFile, ArtProbesFile}

// All is the four runs in the order of RunFileNames.
func (f *RunFiles) All() [4]**runfile.Run {
	return [4]**runfile.Run{&f.RefFresh, &f.ArtFresh, &f.RefProbes, &f.ArtProbes}
}

// ByName is the four runs keyed by their file names.
func (f *RunFiles) ByName() map[string]*runfile.Run {
	out := map[string]*runfile.Run{}
	for i, p := range f.All() {
		out[RunFileNames[i]] = *p
	}
	return out
}

// ReadRunFiles reads the four run files an audit wrote in dir.
func ReadRunFiles(dir string) (RunFiles, error) {
	var f RunFiles
	for i, p := range f.All() {
		r, err := runfile.ReadFile(filepath.Join(dir, RunFileNames[i]))
		if err != nil {
			return RunFiles{}, fmt.Errorf("audit run files: %w", err)
		}
		*p = r
	}
	return f, nil
}

// Claim is what an uploader said that a report server did not take as
// its own: the limits the uploader judged the artifact under and the
// verdict they gave, when they differ from the server's.
type Claim struct {
	Limits  Limits   `json:"limits"`
	Verdict Verdict  `json:"verdict"`
	Reasons []string `json:"reasons,omitempty"`
}

// Rejudge recomputes every figure of rep from its run files with the code
// `audit artifact` uses (Judge, under rep's own comparison settings and
// limits) and refuses a report whose figures differ: deltas, intervals,
// flips, verdict, the sides and the commit. KL, which needs both models'
// full distributions, stays the uploader's (Check bounds it). It returns
// the report judged under limits, the uploader's limits and verdict kept
// as its Claimed when they differ.
func Rejudge(rep *Report, runs RunFiles, limits Limits) (*Report, error) {
	if rep.Claimed != nil || rep.Verified != nil {
		return nil, fmt.Errorf("claimed and verified are set by a report server, never by an upload")
	}
	for i, p := range runs.All() {
		if *p == nil {
			return nil, fmt.Errorf("run file %s is missing", RunFileNames[i])
		}
	}
	for _, c := range []*compare.Comparison{rep.Fresh, rep.Probes} {
		if c.Resamples > MaxResamples {
			return nil, fmt.Errorf("%s: %d resamples, over the %d a server recomputes", c.Test, c.Resamples, MaxResamples)
		}
	}
	opt := Options{Quantized: rep.Quantized, Limits: rep.Limits, Compare: compare.Options{
		Resamples: rep.Fresh.Resamples, Seed: rep.Fresh.Seed, Confidence: rep.Fresh.Confidence,
		MinEffect: compare.MinEffect{BPB: rep.Fresh.MinEffect, Accuracy: rep.Probes.MinEffect}}}
	got, err := Judge(runs.RefFresh, runs.ArtFresh, runs.RefProbes, runs.ArtProbes, rep.KL, opt)
	if err != nil {
		return nil, err
	}
	if err := sameReport(got, rep); err != nil {
		return nil, err
	}
	out := got.Under(limits)
	if out.Verdict != rep.Verdict || out.Limits != rep.Limits {
		out.Claimed = &Claim{Limits: rep.Limits, Verdict: rep.Verdict, Reasons: rep.Reasons}
	}
	return out, nil
}

// MaxResamples bounds the bootstrap a report server repeats for one audit.
const MaxResamples = 2 * compare.DefaultResamples

// Under is r judged under limits: the same figures, its verdict and
// reasons those limits give.
func (r *Report) Under(l Limits) *Report {
	out := *r
	out.Limits = l
	out.Verdict, out.Reasons = verdict(r.Fresh, r.Probes, l)
	return &out
}

// sameReport names the first part of the uploaded report that is not what
// its run files give.
func sameReport(want, got *Report) error {
	var w, g map[string]json.RawMessage
	for _, x := range []struct {
		r *Report
		m *map[string]json.RawMessage
	}{{want, &w}, {got, &g}} {
		b, err := json.Marshal(x.r)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, x.m); err != nil {
			return err
		}
	}
	for _, k := range []string{"git", "reference", "artifact", "quantized", "fresh", "probes", "types", "limits", "verdict", "reasons"} {
		if string(w[k]) != string(g[k]) {
			return fmt.Errorf("%s: not what the audit's run files give (recomputed: %s)", k, clip(string(w[k])))
		}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
