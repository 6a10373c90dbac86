package compare

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/runfile"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

type runPair struct {
	name       string
	base, head *runfile.Run
}

// bothTests makes a fresh-text pair and a probes pair of runs.
func bothTests(bd, hd []runfile.Doc, bi, hi []runfile.Item) []runPair {
	return []runPair{
		{"fresh", comparetest.FreshRun("a", "m", bd), comparetest.FreshRun("b", "m", hd)},
		{"probes", comparetest.ProbeRun("a", "m", bi), comparetest.ProbeRun("b", "m", hi)},
	}
}

func TestIdenticalRunsGiveZero(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(300, 1, 0.9, 0.2)
	items := comparetest.SynthItems(300, 1, 0.6)
	for _, tc := range bothTests(docs, docs, items, items) {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Runs(tc.base, tc.head, Options{Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if c.Delta != 0 || c.CI != [2]float64{0, 0} || c.Verdict != NoChange || c.Significant || c.PValue != 1 {
				t.Errorf("got delta %v ci %v verdict %q p %v, want 0 [0 0] no change p 1", c.Delta, c.CI, c.Verdict, c.PValue)
			}
			for k, g := range c.ByGroup {
				if g.CI != [2]float64{0, 0} || g.Verdict != NoChange {
					t.Errorf("group %s: ci %v verdict %q", k, g.CI, g.Verdict)
				}
			}
			if len(c.Movers.Worse)+len(c.Movers.Better) != 0 {
				t.Errorf("identical runs have movers: %+v", c.Movers)
			}
		})
	}
}

func TestConstantShiftRecovered(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(400, 2, 0.9, 0.2)
	for _, tc := range []struct {
		shift float64
		want  Verdict
	}{
		{-0.01, Improved},
		{0.01, Regressed},
		{0.0015, NoChange}, // below the default minimum effect of 0.002
	} {
		opts := NewOptions()
		opts.Seed = 1
		c, err := Runs(comparetest.FreshRun("a", "m", docs), comparetest.FreshRun("b", "m", comparetest.Shifted(docs, tc.shift)), opts)
		if err != nil {
			t.Fatal(err)
		}
		if !near(c.Delta, tc.shift, 1e-12) || !near(c.CI[0], tc.shift, 1e-12) || !near(c.CI[1], tc.shift, 1e-12) {
			t.Errorf("shift %v: delta %v ci %v", tc.shift, c.Delta, c.CI)
		}
		if c.Verdict != tc.want {
			t.Errorf("shift %v: verdict %q, want %q", tc.shift, c.Verdict, tc.want)
		}
		for k, g := range c.ByGroup {
			if !near(g.Delta, tc.shift, 1e-12) {
				t.Errorf("shift %v group %s: delta %v", tc.shift, k, g.Delta)
			}
		}
	}
}

// Two documents: resamples are AA, AB, BA or BB, so the statistic takes
// three values with probabilities 1/4, 1/2, 1/4, and the 95% percentile
// interval is exactly [AA, BB].
func TestHandComputedFresh(t *testing.T) {
	t.Parallel()
	base := []runfile.Doc{{ID: "A", Source: "s", Bytes: 100, Bits: 100}, {ID: "B", Source: "s", Bytes: 300, Bits: 300}}
	head := []runfile.Doc{{ID: "A", Source: "s", Bytes: 100, Bits: 90}, {ID: "B", Source: "s", Bytes: 300, Bits: 300}}
	c, err := Runs(comparetest.FreshRun("a", "m", base), comparetest.FreshRun("b", "m", head), Options{MinShared: 2, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	// Head: 390 bits / 400 bytes = 0.975; base 1.0. AA: 180/200 - 1 = -0.1; BB: 0.
	if c.Base != 1 || c.Head != 0.975 || !near(c.Delta, -0.025, 1e-15) {
		t.Errorf("base %v head %v delta %v, want 1 0.975 -0.025", c.Base, c.Head, c.Delta)
	}
	if !near(c.CI[0], -0.1, 1e-15) || c.CI[1] != 0 {
		t.Errorf("ci %v, want [-0.1, 0]", c.CI)
	}
	// A quarter of resamples are exactly 0, so p ≈ 2·1/4.
	if c.PValue < 0.45 || c.PValue > 0.55 || c.Verdict != NoChange {
		t.Errorf("p %v verdict %q, want about 0.5 and no change", c.PValue, c.Verdict)
	}
	// Shares of the delta: A gives 90/400 - 100/400, B nothing.
	if len(c.Movers.Better) != 1 || c.Movers.Better[0].ID != "A" || !near(c.Movers.Better[0].Change, -0.025, 1e-15) || len(c.Movers.Worse) != 0 {
		t.Errorf("movers %+v", c.Movers)
	}
}

func TestHandComputedProbes(t *testing.T) {
	t.Parallel()
	base := []runfile.Item{comparetest.Item("i1", "add", 1, true, 1), comparetest.Item("i2", "add", 1, false, 1), comparetest.Item("i3", "add", 2, false, 2), comparetest.Item("i4", "mul", 1, true, 1)}
	head := []runfile.Item{comparetest.Item("i1", "add", 1, false, 3), comparetest.Item("i2", "add", 1, true, 1), comparetest.Item("i3", "add", 2, true, 1), comparetest.Item("i4", "mul", 1, true, 1)}
	c, err := Runs(comparetest.ProbeRun("a", "m", base), comparetest.ProbeRun("b", "m", head), Options{MinShared: 2, ByLevel: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Metric != MetricAccuracy || c.Base != 50 || c.Head != 75 || c.Delta != 25 {
		t.Errorf("metric %s base %v head %v delta %v, want accuracy 50 75 25", c.Metric, c.Base, c.Head, c.Delta)
	}
	if want := (Flips{RightToWrong: 1, WrongToRight: 2, BothRight: 1}); *c.Flips != want {
		t.Errorf("flips %+v, want %+v", *c.Flips, want)
	}
	if g := c.ByGroup["add"]; g == nil || g.N != 3 || !near(g.Delta, 100.0/3, 1e-12) || g.TooFew {
		t.Errorf("group add: %+v", g)
	}
	if g := c.ByLevel["add/2"]; g == nil || g.N != 1 || g.Delta != 100 || !g.TooFew || g.Significant {
		t.Errorf("level add/2: %+v (one item is never judged)", g)
	}
	// Margins: right by m is +m, wrong by m is -m. i1 went from +1 to -3.
	worse := c.Movers.Worse
	if len(worse) != 1 || worse[0].ID != "i1" || worse[0].Change != -4 {
		t.Errorf("worse %+v", worse)
	}
	// i3 moved -2 → +1 (3), i2 moved -1 → +1 (2): the larger first.
	if b := c.Movers.Better; len(b) != 2 || b[0].ID != "i3" || b[1].ID != "i2" {
		t.Errorf("better %+v", b)
	}
}

func TestSeededAndParallelReproducible(t *testing.T) {
	t.Parallel()
	bd, hd := comparetest.SynthDocs(500, 4, 0.9, 0.3), comparetest.SynthDocs(500, 4, 0.89, 0.3)
	bi, hi := comparetest.PairedItems(500, 4, 0.5, 0.55)
	for _, tc := range bothTests(bd, hd, bi, hi) {
		t.Run(tc.name, func(t *testing.T) {
			serial, err := Runs(tc.base, tc.head, Options{Seed: 42, Workers: 1, ByLevel: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []int{2, 3, 8} {
				par, err := Runs(tc.base, tc.head, Options{Seed: 42, Workers: w, ByLevel: true})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(serial, par) {
					t.Errorf("%d workers: ci %v, serial %v", w, par.CI, serial.CI)
				}
			}
			other, err := Runs(tc.base, tc.head, Options{Seed: 43})
			if err != nil {
				t.Fatal(err)
			}
			if other.CI == serial.CI {
				t.Errorf("seeds 42 and 43 gave the same interval %v: the seed is not used", serial.CI)
			}
			if other.Delta != serial.Delta {
				t.Errorf("the point estimate depends on the seed")
			}
		})
	}
}

// With a known true difference, the 95% interval must cover it about 95%
// of the time. Each trial draws new data; 400 trials put the coverage
// within about ±2.2 points of the truth (two standard errors).
func TestCoverage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulation")
	}
	const trials = 400
	for _, tc := range []struct {
		name  string
		truth float64
		run   func(trial uint64) (*runfile.Run, *runfile.Run)
	}{
		{"fresh", -0.01, func(trial uint64) (*runfile.Run, *runfile.Run) {
			// Same sizes, independent noise around rates 0.90 and 0.89:
			// the ratio of expected sums differs by exactly -0.01.
			return comparetest.FreshRun("a", "m", comparetest.SynthDocs(150, 100+trial, 0.90, 0.1)), comparetest.FreshRun("b", "m", comparetest.SynthDocs(150, 100+trial, 0.89, 0.1))
		}},
		{"probes", 5, func(trial uint64) (*runfile.Run, *runfile.Run) {
			b, h := comparetest.PairedItems(300, 100+trial, 0.5, 0.55)
			return comparetest.ProbeRun("a", "m", b), comparetest.ProbeRun("b", "m", h)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			covered := 0
			for trial := range uint64(trials) {
				base, head := tc.run(trial)
				// 1,000 resamples: the 2.5% and 97.5% points then rest on
				// 25 resamples each, plenty for coverage at this precision.
				c, err := Runs(base, head, Options{Seed: trial, Resamples: 1000, Workers: 2})
				if err != nil {
					t.Fatal(err)
				}
				if c.CI[0] <= tc.truth && tc.truth <= c.CI[1] {
					covered++
				}
			}
			rate := float64(covered) / trials
			t.Logf("coverage %.3f over %d trials", rate, trials)
			if rate < 0.93 || rate > 0.97 {
				t.Errorf("95%% interval covered the true delta in %.1f%% of %d trials, want 93-97%%", 100*rate, trials)
			}
		})
	}
}

func TestMinEffect(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(1000, 5, 0.9, 0.02)
	_, items := comparetest.PairedItems(2000, 5, 0.5, 0.5)
	for _, tc := range []struct {
		name string
		base *runfile.Run
		head *runfile.Run
		opts Options
		want Verdict
	}{
		{"bpb below default", comparetest.FreshRun("a", "m", docs), comparetest.FreshRun("b", "m", comparetest.Shifted(docs, -0.001)), NewOptions(), NoChange},
		{"bpb with no minimum", comparetest.FreshRun("a", "m", docs), comparetest.FreshRun("b", "m", comparetest.Shifted(docs, -0.001)), minEffect(MinEffect{Accuracy: 1}), Improved},
		{"zero value has no minimum", comparetest.FreshRun("a", "m", docs), comparetest.FreshRun("b", "m", comparetest.Shifted(docs, -0.001)), Options{}, Improved},
		{"bpb above a raised minimum", comparetest.FreshRun("a", "m", docs), comparetest.FreshRun("b", "m", comparetest.Shifted(docs, 0.004)), minEffect(MinEffect{BPB: 0.003}), Regressed},
		{"bpb below a raised minimum", comparetest.FreshRun("a", "m", docs), comparetest.FreshRun("b", "m", comparetest.Shifted(docs, 0.004)), minEffect(MinEffect{BPB: 0.005}), NoChange},
		{"accuracy under 1 point", comparetest.ProbeRun("a", "m", items), comparetest.ProbeRun("b", "m", comparetest.ShiftItems(items, 150)), NewOptions(), NoChange},
		{"accuracy with a 0.3 point minimum", comparetest.ProbeRun("a", "m", items), comparetest.ProbeRun("b", "m", comparetest.ShiftItems(items, 150)), minEffect(MinEffect{Accuracy: 0.3}), Improved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Runs(tc.base, tc.head, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if c.Verdict != tc.want {
				t.Errorf("delta %v ci %v min %v: verdict %q, want %q", c.Delta, c.CI, c.MinEffect, c.Verdict, tc.want)
			}
			if excl := c.CI[0] > 0 || c.CI[1] < 0; !excl {
				t.Errorf("interval %v should exclude zero in this case", c.CI)
			}
		})
	}
}

// minEffect is NewOptions with m as the minimum effect.
func minEffect(m MinEffect) Options {
	o := NewOptions()
	o.MinEffect = m
	return o
}

// A negative or not-a-number minimum effect is refused, never read as
// none or as the default.
func TestMinEffectRefused(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(30, 5, 0.9, 0.02)
	for _, m := range []MinEffect{{BPB: -1}, {Accuracy: math.NaN()}, {BPB: math.Inf(1)}} {
		if _, err := Runs(comparetest.FreshRun("a", "m", docs), comparetest.FreshRun("b", "m", docs), minEffect(m)); err == nil || !strings.Contains(err.Error(), "minimum effect") {
			t.Errorf("minimum effect %+v: %v, want refused", m, err)
		}
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(100, 6, 0.9, 0.1)
	for _, tc := range []struct {
		name     string
		edit     func(h *runfile.Header)
		base     func(h *runfile.Header) // nil: the base as built
		allow    bool
		wantErr  string
		mismatch bool
		keys     []string // settings_diff keys, in order
	}{
		{name: "runtime only is shown", edit: func(h *runfile.Header) { h.Runtime.Threads = 8 }, keys: []string{"threads"}},
		{name: "window refused", edit: func(h *runfile.Header) { h.Settings.Window = 1024; h.Runtime.Threads = 8 },
			wantErr: "window: 2048 -> 1024"},
		{name: "window allowed", edit: func(h *runfile.Header) { h.Settings.Window = 1024; h.Runtime.Threads = 8 },
			allow: true, mismatch: true, keys: []string{"window", "threads"}},
		{name: "same model, other tokenizer refused", edit: func(h *runfile.Header) { h.Settings.TokenizerSHA256 = "other" },
			wantErr: "tokenizer_sha256"},
		{name: "other model, same tokenizer", edit: func(h *runfile.Header) { h.Model.Name = "org/big" }},
		{name: "other model, other tokenizer expected", edit: func(h *runfile.Header) {
			h.Model.Name = "org/big"
			h.Settings.TokenizerSHA256 = "other"
			h.Settings.BOSID = 0
		}, keys: []string{"bos_id", "tokenizer_sha256"}},
		{name: "same model, other text preparation refused", edit: func(h *runfile.Header) {
			h.Settings.TextPrep = &runfile.TextPrep{By: runfile.PrepHF, Normalizer: "NFC", AddedTokens: 3}
		}, wantErr: "text_prep: (none) -> hf, normalizer NFC, 3 added tokens matched"},
		{name: "other model, other normalizer expected", edit: func(h *runfile.Header) {
			h.Model.Name = "org/big"
			h.Settings.TextPrep = &runfile.TextPrep{By: runfile.PrepHF, Normalizer: "NFC", AddedTokens: 3}
		}, base: func(h *runfile.Header) { h.Settings.TextPrep = &runfile.TextPrep{By: runfile.PrepHF, AddedTokens: 1} }, keys: []string{"text_prep"}},
		{name: "other model, hf against llama.cpp refused", edit: func(h *runfile.Header) {
			h.Model.Name = "org/big"
			h.Settings.TextPrep = &runfile.TextPrep{By: runfile.PrepLlama}
		}, base: func(h *runfile.Header) { h.Settings.TextPrep = &runfile.TextPrep{By: runfile.PrepHF} }, wantErr: "text_prep"},
		{name: "other model, other dataset refused", edit: func(h *runfile.Header) {
			h.Model.Name = "org/big"
			h.Dataset.SHA256 = "other"
		}, wantErr: "dataset.sha256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := comparetest.FreshRun("b", "org/small", docs)
			base := comparetest.FreshRun("a", "org/small", docs)
			tc.edit(&head.Header)
			if tc.base != nil {
				tc.base(&base.Header)
			}
			c, err := Runs(base, head, Options{AllowSettingsMismatch: tc.allow})
			if tc.wantErr != "" {
				var me *MismatchError
				if !errors.As(err, &me) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "--allow-settings-mismatch") {
					t.Fatalf("err = %v, want a *MismatchError naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, d := range c.SettingsDiff {
				keys = append(keys, d.Key)
			}
			if !reflect.DeepEqual(keys, tc.keys) || c.Mismatch != tc.mismatch {
				t.Errorf("diff keys %v mismatch %v, want %v %v", keys, c.Mismatch, tc.keys, tc.mismatch)
			}
			if !c.SameModel {
				for _, d := range c.SettingsDiff {
					if !d.Expected {
						t.Errorf("%s differs by design but is not marked expected", d.Key)
					}
				}
				if len(c.Notes) == 0 || !strings.Contains(c.Notes[0], "Different models") {
					t.Fatalf("notes %q do not say the models differ", c.Notes)
				}
				// Across tokenizers only when they differ (issue 32).
				other := base.Header.Settings.TokenizerSHA256 != head.Header.Settings.TokenizerSHA256
				if got := strings.Contains(c.Notes[0], "compares across tokenizers"); got != other {
					t.Errorf("note %q; the tokenizers differ: %v", c.Notes[0], other)
				}
			}
		})
	}
}

func TestPairingAndRefusals(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(30, 7, 0.9, 0.1)
	c, err := Runs(comparetest.FreshRun("a", "m", docs[:27]), comparetest.FreshRun("b", "m", docs[2:]), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.N != 25 || c.OnlyBase != 2 || c.OnlyHead != 3 {
		t.Errorf("n %d only base %d only head %d, want 25 2 3", c.N, c.OnlyBase, c.OnlyHead)
	}
	for _, tc := range []struct {
		name       string
		base, head *runfile.Run
		opts       Options
		want       string
	}{
		{"too few shared", comparetest.FreshRun("a", "m", docs[:5]), comparetest.FreshRun("b", "m", docs), Options{}, "share 5 records (base has 5, head 30); at least 10"},
		{"different tests", comparetest.FreshRun("a", "m", docs), comparetest.ProbeRun("b", "m", comparetest.SynthItems(30, 1, 0.5)), Options{}, "base run a is a fresh run but head run b is a probes run"},
		{"bad confidence", comparetest.FreshRun("a", "m", docs), comparetest.FreshRun("b", "m", docs), Options{Confidence: 95}, "confidence 95"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Runs(tc.base, tc.head, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// The JSON keys and types of `compare --json`, a contract with the
// report server and anyone scripting against it: a change here breaks them.
func TestJSONContract(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(100, 8, 0.9, 0.1)
	head := comparetest.FreshRun("b", "m", comparetest.Shifted(docs, 0.01))
	head.Header.Runtime.Threads = 4
	c, err := Runs(comparetest.FreshRun("a", "m", docs), head, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["metric"] != "bpb" || m["verdict"] != "regressed" || m["significant"] != true || m["n"] != 100.0 {
		t.Errorf("metric %v verdict %v significant %v n %v", m["metric"], m["verdict"], m["significant"], m["n"])
	}
	for _, k := range []string{"base", "head", "delta"} {
		if _, ok := m[k].(float64); !ok {
			t.Errorf("%s is %T, want a number", k, m[k])
		}
	}
	if ci, ok := m["ci"].([]any); !ok || len(ci) != 2 {
		t.Errorf("ci is %v, want [lo, hi]", m["ci"])
	}
	if sd, ok := m["settings_diff"].([]any); !ok || len(sd) != 1 || sd[0].(map[string]any)["key"] != "threads" {
		t.Errorf("settings_diff is %v", m["settings_diff"])
	}
	groups, ok := m["by_group"].(map[string]any)
	if !ok || len(groups) != 3 {
		t.Fatalf("by_group is %v, want 3 sources", m["by_group"])
	}
	if g := groups["arxiv"].(map[string]any); g["verdict"] == nil || g["ci"] == nil {
		t.Errorf("by_group entry %v lacks verdict or ci", g)
	}
}

// TestRunsContextStops: a cancelled context stops the bootstrap with
// the context's error, whether it ends before or during the resampling.
func TestRunsContextStops(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(50000, 1, 0.95, 0.2) // about a second of resampling at 4,000
	base := comparetest.FreshRun("base", "m", docs)
	head := comparetest.FreshRun("head", "m", comparetest.Shifted(comparetest.SynthDocs(50000, 1, 0.95, 0.2), -0.003))
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunsContext(done, base, head, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := RunsContext(ctx, base, head, Options{Workers: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled during: %v", err)
	}
}

// TestUnverifiedTokenizerNoted: a run whose tokenizer conversion was not
// verified says so in the comparison's notes, even when both runs share it.
func TestUnverifiedTokenizerNoted(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(50, 1, 1.0, 0.1)
	base, head := comparetest.FreshRun("b", "m", docs), comparetest.FreshRun("h", "m", comparetest.Shifted(docs, 0.01))
	for _, r := range []*runfile.Run{base, head} {
		r.Header.Settings.TextPrep = &runfile.TextPrep{By: runfile.PrepHF, Unverified: "pre-tokenizer Whitespace matches none"}
	}
	c, err := Runs(base, head, Options{Resamples: 50, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"The base model's tokenizer is unverified (--allow-unverified-tokenizer): pre-tokenizer Whitespace matches none.",
		"The head model's tokenizer is unverified (--allow-unverified-tokenizer): pre-tokenizer Whitespace matches none."}
	if !slices.Equal(c.Notes, want) {
		t.Errorf("notes %q, want %q", c.Notes, want)
	}
}
