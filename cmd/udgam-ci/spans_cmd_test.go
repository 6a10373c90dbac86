package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Through llama.cpp, a sequential run over spans scores each window alone
// (packed with other documents' windows) exactly as the whole run scores
// it: a quantized transformer (whose bits packing may not change, issue
// 40) against its own whole run never sees a span change, goes to the
// last span, and its spans put back together are the whole run's records
// to the bit; compare --json says so. (A float32 model's windows move by
// up to float32 rounding with the packing, within the engine's 1e-4 nats.)
func TestScoreFreshSpansThroughLlama(t *testing.T) {
	t.Parallel()
	needEngine(t)
	dir := t.TempDir()
	gguf := quantizedLlama(t, dir, "q8_0")["q8_0"]
	data := writeDocs(t, dir, fresh.GenerateDocs(4, 12, 100, 700))
	score := func(out string, more ...string) {
		t.Helper()
		e, _, stderr := freshTestEnv()
		args := append([]string{"score", "fresh", "--model", gguf, "--data", data, "--out", out, "--window", "64", "--stride", "32", "--threads", "1"}, more...)
		if code := run(e, args); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
	}
	base, head := filepath.Join(dir, "base.jsonl"), filepath.Join(dir, "head.jsonl")
	score(base)
	// the same model: --rescore scores it, which reuse would not
	score(head, "--until", "decided", "--baseline", base, "--min-effect", "0", "--rescore")
	b, err := runfile.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	h, err := runfile.ReadFile(head)
	if err != nil {
		t.Fatal(err)
	}
	q := h.Header.Sequential
	if q == nil || q.Unit != runfile.UnitSpan || q.Stop == nil || q.Stop.Reason != sequential.Complete || h.Len() != q.Total || q.Total <= len(b.Docs) {
		t.Fatalf("sequential header %+v with %d records, want complete over every span (more than the %d documents)", q, h.Len(), len(b.Docs))
	}
	if joined := runfile.JoinSpans(h.Docs); !sameDocSet(joined, b.Docs) {
		t.Errorf("the spans put back together differ from the whole run's records")
	}
	c := compareJSON(t, base, head)
	if c.Delta != 0 || c.Sequential == nil || c.Sequential.Reason != sequential.Complete || c.Sequential.Unit != runfile.UnitSpan || c.N != len(b.Docs) {
		t.Errorf("compare: delta %v over %d, sequential %+v", c.Delta, c.N, c.Sequential)
	}
}

// Through llama.cpp, 20 sequential runs over spans (one order seed each)
// of a model's q4_0 requantization against its q8_0 baseline stop where
// the simulation of their order stops: the two whole runs' spans fed to
// compare/sequential in the seed's order, with the rule the tracker sets
// up; the same span, the same reason, the same interval, to the bit.
func TestScoreFreshSpansStopWhereSimulated(t *testing.T) {
	t.Parallel()
	needEngine(t)
	dir := t.TempDir()
	ggufs := quantizedLlama(t, dir, "q8_0", "q4_0")
	data := writeDocs(t, dir, fresh.GenerateDocs(5, 40, 100, 1500))
	score := func(model, out string, more ...string) *runfile.Run {
		t.Helper()
		e, _, stderr := freshTestEnv()
		args := append([]string{"score", "fresh", "--model", ggufs[model], "--data", data, "--out", out, "--window", "64", "--stride", "32", "--threads", "1"}, more...)
		if code := run(e, args); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		r, err := runfile.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	base := filepath.Join(dir, "base.jsonl")
	b, whole := score("q8_0", base), score("q4_0", filepath.Join(dir, "whole.jsonl"))
	type unit struct{ d, w float64 }
	units := map[string]unit{}
	var ids []string
	var w float64
	for i := range b.Docs {
		bs, hs := runfile.SplitSpans(&b.Docs[i]), runfile.SplitSpans(&whole.Docs[i])
		for k := range bs {
			units[bs[k].ID] = unit{hs[k].Bits - bs[k].Bits, float64(bs[k].Bytes)}
			ids = append(ids, bs[k].ID)
			w += float64(bs[k].Bytes)
		}
	}
	const minEffect = 0.002
	stops := map[int]bool{}
	for seed := uint64(1); seed <= 20; seed++ {
		pilot := min(sequential.DefaultPilot, len(ids))
		s, err := sequential.New(sequential.Config{N: len(ids), W: w, Level: compare.DefaultConfidence, MinEffect: minEffect, First: pilot, Pilot: pilot})
		if err != nil {
			t.Fatal(err)
		}
		reason := ""
		for _, id := range sequential.Order(ids, nil, seed) {
			if err := s.Add(units[id].d, units[id].w); err != nil {
				t.Fatal(err)
			}
			if reason, _ = s.Decision(); reason != "" {
				break
			}
		}
		lo, hi := s.Interval()
		h := score("q4_0", filepath.Join(dir, fmt.Sprintf("seed%d.jsonl", seed)), "--until", "decided", "--baseline", base,
			"--order-seed", fmt.Sprint(seed), "--min-effect", fmt.Sprint(minEffect))
		st := h.Header.Sequential.Stop
		if st == nil || st.Reason != reason || st.Scored != s.Scored() || st.CI != [2]float64{lo, hi} {
			t.Errorf("seed %d: the run stopped %+v, its simulation (%s) after %d of %d spans with [%v, %v]", seed, st, reason, s.Scored(), len(ids), lo, hi)
			continue
		}
		t.Logf("seed %d: %s after %d of %d spans", seed, st.Reason, st.Scored, len(ids))
		stops[st.Scored] = true
	}
	if len(stops) < 5 {
		t.Errorf("the 20 seeds stopped at only %d places: the test cannot tell orders apart", len(stops))
	}
}

// quantizedLlama writes a random-weight llama transformer into dir and
// quantizes it to each of types, giving each type's GGUF path.
func quantizedLlama(t *testing.T, dir string, types ...string) map[string]string {
	t.Helper()
	m, err := testmodel.RandomLlama(5, testmodel.DefaultShape())
	if err != nil {
		t.Fatal(err)
	}
	f32 := filepath.Join(dir, "llama.gguf")
	if err := testmodel.WriteLlamaGGUF(f32, m); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, typ := range types {
		out[typ] = filepath.Join(dir, typ+".gguf")
		if err := engineQuantize(f32, out[typ], typ, 1); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// sameDocSet says whether a and b hold the same records, in any order.
func sameDocSet(a, b []runfile.Doc) bool {
	if len(a) != len(b) {
		return false
	}
	byID := map[string]runfile.Doc{}
	for _, d := range a {
		byID[d.ID] = d
	}
	for _, d := range b {
		if !reflect.DeepEqual(byID[d.ID], d) {
			return false
		}
	}
	return true
}

// compareJSON is `udgam-ci compare BASE HEAD --json`, decoded.
func compareJSON(t *testing.T, base, head string) compare.Comparison {
	t.Helper()
	e, stdout, stderr := freshTestEnv()
	if code := run(e, []string{"compare", base, head, "--json"}); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, stderr.String())
	}
	var c compare.Comparison
	if err := json.Unmarshal(stdout.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	return c
}
