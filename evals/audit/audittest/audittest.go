// Package audittest makes artifact audit reports from synthetic runs
// (compare/comparetest's), for the tests of every surface that shows one:
// the Action's comment, audit push and the report server's pages.
package audittest

import (
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Spec describes an audit; zero fields get the defaults said.
type Spec struct {
	// Model and Git are what the four runs' headers carry (the model's
	// name, revision and file stem; the commit): where the audit is filed.
	// Zero: comparetest's.
	Model runfile.Model
	Git   runfile.Git
	// RefSHA256 and ArtSHA256 are each side's model file sha256 in its
	// runs' headers (zero: Model's).
	RefSHA256, ArtSHA256 string
	// Items probe items (300), each right with probability PRef in the
	// reference and PArt in the artifact (0.65 and 0.5: a loss of about
	// fifteen points), drawn with Seed.
	Items      int
	PRef, PArt float64
	Seed       uint64
	// BPBRise is how much the artifact's bits per byte rise on each of
	// the 40 documents.
	BPBRise float64
	KL      audit.KL
	Limits  audit.Limits // zero: audit.DefaultLimits
	// Quantized names the type when udgam-ci made the artifact.
	Quantized string
	Resamples int // 500
}

// Report judges the Spec's four runs into a report, as audit.Run would
// from real ones.
func Report(t testing.TB, s Spec) *audit.Report {
	t.Helper()
	rep, _ := Judged(t, s)
	return rep
}

// Judged is Report with the four runs it was judged from: what an upload
// to a report server carries.
func Judged(t testing.TB, s Spec) (*audit.Report, audit.RunFiles) {
	t.Helper()
	if s.Items == 0 {
		s.Items = 300
	}
	if s.PRef == 0 && s.PArt == 0 {
		s.PRef, s.PArt = 0.65, 0.5
	}
	if s.Limits == (audit.Limits{}) {
		s.Limits = audit.DefaultLimits
	}
	if s.Resamples == 0 {
		s.Resamples = 500
	}
	side := func(r *runfile.Run, dtype, sha string) *runfile.Run {
		if s.Model.Name != "" {
			r.Header.Model = s.Model
			r.Header.Model.File = s.Model.File + "-" + dtype + ".gguf"
		}
		if sha != "" {
			r.Header.Model.SHA256 = sha
		}
		if s.Git.Repo != "" {
			r.Header.Git = s.Git
		}
		r.Header.Settings.Dtype = dtype
		return r
	}
	art := s.Quantized
	if art == "" {
		art = "q4_0"
	}
	docs := comparetest.SynthDocs(40, s.Seed, 0.9, 0.1)
	ref, got := comparetest.PairedItems(s.Items, s.Seed, s.PRef, s.PArt)
	runs := audit.RunFiles{
		RefFresh: side(comparetest.FreshRun("rf", "m", docs), "f16", s.RefSHA256), ArtFresh: side(comparetest.FreshRun("af", "m", comparetest.Shifted(docs, s.BPBRise)), art, s.ArtSHA256),
		RefProbes: side(comparetest.ProbeRun("rp", "m", ref), "f16", s.RefSHA256), ArtProbes: side(comparetest.ProbeRun("ap", "m", got), art, s.ArtSHA256)}
	cmp := compare.NewOptions() // as audit artifact judges
	cmp.Resamples, cmp.Seed = s.Resamples, s.Seed
	rep, err := audit.Judge(runs.RefFresh, runs.ArtFresh, runs.RefProbes, runs.ArtProbes,
		s.KL, audit.Options{Compare: cmp, Limits: s.Limits, Quantized: s.Quantized})
	if err != nil {
		t.Fatal(err)
	}
	return rep, runs
}
