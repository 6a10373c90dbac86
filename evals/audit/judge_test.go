package audit_test

import (
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// judge audits synthetic runs: identical Fresh Text runs, probe items
// right with probability pRef and pArt.
func judge(t testing.TB, n int, seed uint64, pRef, pArt float64, limits audit.Limits) *audit.Report {
	t.Helper()
	docs := comparetest.SynthDocs(30, 1, 0.9, 0.1)
	refItems, artItems := comparetest.PairedItems(n, seed, pRef, pArt)
	art := func(r *runfile.Run) *runfile.Run { r.Header.Settings.Dtype = "q4_0"; return r }
	rep, err := audit.Judge(
		comparetest.FreshRun("rf", "m", docs), art(comparetest.FreshRun("af", "m", docs)),
		comparetest.ProbeRun("rp", "m", refItems), art(comparetest.ProbeRun("ap", "m", artItems)),
		audit.KL{}, audit.Options{Compare: compare.Options{Resamples: 400, Seed: seed}, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// The verdict fails an artifact only for a loss beyond the limit that is
// also significant. With no true loss and no allowance (limit 0) it fails
// about 2.5% of audits (the interval's one side); the naive rule, "the
// point estimate is past the limit", fails about half of them. A true
// loss of ten points past a limit of two fails nearly always.
func TestVerdictErrorRate(t *testing.T) {
	t.Parallel()
	const reps = 150
	fails, naive := 0, 0
	for seed := range uint64(reps) {
		r := judge(t, 400, seed, 0.5, 0.5, audit.Limits{BPB: 0, Accuracy: 0})
		if r.Verdict == audit.Fail {
			fails++
		}
		if -r.Probes.Delta > 0 {
			naive++
		}
	}
	t.Logf("no true loss: %d of %d audits fail (naive rule: %d)", fails, reps, naive)
	if fails > 9 { // expected 3.75; 9 is beyond its 99.5% binomial quantile
		t.Errorf("%d of %d audits of an unharmed artifact fail, want about 2.5%%", fails, reps)
	}
	if naive < reps/4 {
		t.Errorf("the naive rule fails only %d of %d: the simulation cannot tell the rules apart", naive, reps)
	}
	caught := 0
	for seed := range uint64(40) {
		if judge(t, 400, 1000+seed, 0.6, 0.48, audit.DefaultLimits).Verdict == audit.Fail {
			caught++
		}
	}
	if caught < 36 {
		t.Errorf("a 12-point loss against a 2-point limit fails %d of 40 audits, want nearly all", caught)
	}
}

// Judge refuses runs that differ in a judged setting other than the dtype:
// an audit scores both models with the same settings.
func TestJudgeRefusesOtherSettings(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(30, 1, 0.9, 0.1)
	items, _ := comparetest.PairedItems(100, 1, 0.5, 0.5)
	other := comparetest.FreshRun("af", "m", docs)
	other.Header.Settings.Window = 1024
	_, err := audit.Judge(comparetest.FreshRun("rf", "m", docs), other,
		comparetest.ProbeRun("rp", "m", items), comparetest.ProbeRun("ap", "m", items), audit.KL{}, audit.Options{})
	if err == nil || !strings.Contains(err.Error(), "window") {
		t.Errorf("a window of 1024 against 2048: %v", err)
	}
}

func TestParseArtifact(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want audit.Artifact
		err  string
	}{
		{"Q4_K_M", audit.Artifact{Quantize: "q4_K_M"}, ""},
		{"q8_0", audit.Artifact{Quantize: "q8_0"}, ""},
		{"dist/model-q4.gguf", audit.Artifact{File: "dist/model-q4.gguf"}, ""},
		{"hf://acme/tiny-gguf@0123456789abcdef0123456789abcdef01234567/tiny-q4_0.gguf",
			audit.Artifact{Hub: "hf://acme/tiny-gguf@0123456789abcdef0123456789abcdef01234567/tiny-q4_0.gguf"}, ""},
		{"hf://acme/tiny-gguf@0123456789abcdef0123456789abcdef01234567", audit.Artifact{}, "name the .gguf file"},
		{"q3_K", audit.Artifact{}, "not a quantization type"},
		{"", audit.Artifact{}, "empty"},
	} {
		got, err := audit.ParseArtifact(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error with %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}
