// Package comparetest builds synthetic runs for the tests of compare and
// report: documents and items whose scores, shifts and correlations are
// known, so a test can say what a comparison must find.
package comparetest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Header makes a valid header with fixed settings; tests change what they need.
func Header(id, test, model string) runfile.Header {
	pr := 7
	return runfile.Header{
		Schema: runfile.Schema, ID: id, Test: test,
		Model:   runfile.Model{Name: model, Revision: "0123456789abcdef0123456789abcdef01234567", Dtype: "f16"},
		Dataset: runfile.Dataset{Name: "udgam/fresh-2026-09", Revision: "r1", SHA256: "d5", Count: 1670},
		Settings: runfile.Settings{AddBOS: true, BOSMode: "auto", BOSID: 1, Window: 2048, Stride: 1024,
			Dtype: "f16", TokenizerSHA256: "tok-" + model, Engine: "llama.cpp ec98e2002", Formulation: "v1"},
		Runtime:   runfile.Runtime{Threads: 2, BatchSize: 512, Host: "ci"},
		Git:       runfile.Git{Repo: "udgamlabs/tiny", SHA: "abc1234", Ref: "main", PR: &pr},
		StartedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
	}
}

// sourceNames cycles documents through three sources.
var sourceNames = []string{"arxiv", "wikipedia", "news"}

// SynthDocs makes n documents whose bits per byte scatter around rate;
// the same seed gives the same bytes, so two calls pair document by document.
func SynthDocs(n int, seed uint64, rate, spread float64) []runfile.Doc {
	sizes := rand.New(rand.NewPCG(seed, 1))
	noise := rand.New(rand.NewPCG(seed, uint64(rate*1e6)))
	docs := make([]runfile.Doc, n)
	for i := range docs {
		bytes := 200 + sizes.IntN(4000)
		docs[i] = runfile.Doc{ID: fmt.Sprintf("doc-%04d", i), Source: sourceNames[i%len(sourceNames)],
			Bytes: bytes, Tokens: bytes / 4, Windows: 1,
			Bits: float64(bytes) * max(0.05, rate+spread*noise.NormFloat64())}
	}
	return docs
}

// Shifted returns docs with bits moved by delta bits per byte.
func Shifted(docs []runfile.Doc, delta float64) []runfile.Doc {
	out := append([]runfile.Doc(nil), docs...)
	for i := range out {
		out[i].Bits += delta * float64(out[i].Bytes)
	}
	return out
}

var probeTypes = []string{"add", "mul", "units", "sequence", "word_problem", "compare", "syllogism"}

// SynthItems makes n items, each right with probability acc; the answer is
// choice 0 and the logprobs put the prediction first.
func SynthItems(n int, seed uint64, acc float64) []runfile.Item {
	g := rand.New(rand.NewPCG(seed, 2))
	items := make([]runfile.Item, n)
	for i := range items {
		typ := probeTypes[i%len(probeTypes)]
		items[i] = Item(fmt.Sprintf("pea-%s-%d-%d", typ, 1+i%3, i), typ, 1+i%3, g.Float64() < acc, 1+g.Float64())
	}
	return items
}

// Item makes one four-choice item with answer 0, right or wrong by margin m.
func Item(id, typ string, level int, correct bool, m float64) runfile.Item {
	it := runfile.Item{ID: id, Type: typ, Level: level, Logprobs: []float64{-5, -5 - m, -6 - m, -7 - m}}
	if !correct {
		it.Logprobs[1] = -5 + m
		it.Pred = 1
	}
	it.Correct = it.Pred == it.Answer
	return it
}

// FreshRun is a fresh-text run of docs with Header's settings.
func FreshRun(id, model string, docs []runfile.Doc) *runfile.Run {
	return &runfile.Run{Header: Header(id, runfile.TestFresh, model), Docs: docs}
}

// ProbeRun is a probes run of items on the core probe set.
func ProbeRun(id, model string, items []runfile.Item) *runfile.Run {
	h := Header(id, runfile.TestProbes, model)
	h.Dataset = runfile.Dataset{Name: "udgam/probes-core", Revision: "r1", SHA256: "p5", Count: 2000}
	h.Settings.Window, h.Settings.Stride = 0, 0
	return &runfile.Run{Header: h, Items: items}
}

// PairedItems makes base and head items over the same ids, right with
// probability pBase and pHead; most items share one latent draw, so the
// runs are correlated as two checkpoints are, and the true delta is
// 100·(pHead − pBase) points whatever the correlation.
func PairedItems(n int, seed uint64, pBase, pHead float64) (base, head []runfile.Item) {
	g := rand.New(rand.NewPCG(seed, 3))
	base = make([]runfile.Item, n)
	head = make([]runfile.Item, n)
	for i := range n {
		typ := probeTypes[i%len(probeTypes)]
		id := fmt.Sprintf("pea-%s-%d-%d", typ, 1+i%3, i)
		u := g.Float64()
		v := u
		if g.Float64() < 0.3 {
			v = g.Float64()
		}
		base[i] = Item(id, typ, 1+i%3, u < pBase, 0.5+g.Float64())
		head[i] = Item(id, typ, 1+i%3, v < pHead, 0.5+g.Float64())
	}
	return base, head
}

// Jittered moves each document's bits per byte by its own small noise, as
// a retrained checkpoint does, so intervals have a realistic width.
func Jittered(docs []runfile.Doc, seed uint64, sd float64) []runfile.Doc {
	g := rand.New(rand.NewPCG(seed, 4))
	out := append([]runfile.Doc(nil), docs...)
	for i := range out {
		out[i].Bits = max(0, out[i].Bits+sd*g.NormFloat64()*float64(out[i].Bytes))
	}
	return out
}

// ShiftItems makes every k-th wrong item right: a small, sure improvement.
func ShiftItems(items []runfile.Item, k int) []runfile.Item {
	out := append([]runfile.Item(nil), items...)
	wrong := 0
	for i := range out {
		if !out[i].Correct {
			if wrong%k == 0 {
				out[i] = Item(out[i].ID, out[i].Type, out[i].Level, true, 1)
			}
			wrong++
		}
	}
	return out
}

// SequentialHead is head as a sequential run (--until decided) against
// base that stopped for the budget after its first k records in the seeded
// order; compare judges it from its records.
func SequentialHead(base, head *runfile.Run, k int, minEffect float64) *runfile.Run {
	var ids []string
	docs := map[string]runfile.Doc{}
	items := map[string]runfile.Item{}
	for _, d := range head.Docs {
		docs[d.ID] = d
	}
	for _, it := range head.Items {
		items[it.ID] = it
	}
	for _, d := range base.Docs {
		ids = append(ids, d.ID)
	}
	for _, it := range base.Items {
		ids = append(ids, it.ID)
	}
	// the order compare.Tracker gives: for documents, the take-all
	// stratum first
	weights := make([]float64, len(base.Docs))
	for i, d := range base.Docs {
		weights[i] = float64(d.Bytes)
	}
	first := map[string]bool{}
	if len(base.Docs) > 0 {
		idx, _ := sequential.TakeAll(weights)
		for _, i := range idx {
			first[base.Docs[i].ID] = true
		}
	}
	out := &runfile.Run{Header: head.Header}
	for _, id := range sequential.Order(ids, first, sequential.DefaultSeed)[:k] {
		if d, ok := docs[id]; ok {
			out.Docs = append(out.Docs, d)
		}
		if it, ok := items[id]; ok {
			out.Items = append(out.Items, it)
		}
	}
	out.Header.Sequential = &runfile.Sequential{Rule: runfile.RuleUntilDecided, Seed: sequential.DefaultSeed, Level: 0.95,
		MinEffect: minEffect, Budget: fmt.Sprint(k), Baseline: base.Header.ID, Total: base.Len(),
		Stop: &runfile.Stop{Reason: sequential.Budget, Scored: k}}
	return out
}

// RelatedItems makes k runs' items over the same ids, each right with
// probability p: every item has one latent draw the runs share, and each
// run draws its own instead with probability redraw, so every pair of
// runs differs by zero in truth (the null a gate must pass).
func RelatedItems(n, k int, seed uint64, p, redraw float64) [][]runfile.Item {
	g := rand.New(rand.NewPCG(seed, 5))
	out := make([][]runfile.Item, k)
	for j := range out {
		out[j] = make([]runfile.Item, n)
	}
	for i := range n {
		typ := probeTypes[i%len(probeTypes)]
		id := fmt.Sprintf("pea-%s-%d-%d", typ, 1+i%3, i)
		u := g.Float64()
		for j := range out {
			v := u
			if g.Float64() < redraw {
				v = g.Float64()
			}
			out[j][i] = Item(id, typ, 1+i%3, v < p, 0.5+g.Float64())
		}
	}
	return out
}
