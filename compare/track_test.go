package compare

import (
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// A sequential run needs a baseline of the whole set whose byte counts the
// head shares; anything else is refused with the record at fault named.
func TestTrackerRefuses(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(80, 3, 0.9, 0.1)
	base := comparetest.FreshRun("base", "m", docs)
	start := func(b *runfile.Run, test string) error {
		_, _, err := StartSequential(b, test, sequential.DefaultSeed, 0.95, 0.002, "")
		return err
	}
	if err := start(base, runfile.TestProbes); err == nil || !strings.Contains(err.Error(), "fresh run") {
		t.Errorf("a fresh baseline for probes: %v", err)
	}
	noBOS := comparetest.FreshRun("nobos", "m", append([]runfile.Doc(nil), docs...))
	noBOS.Docs[7].FirstUnscored = true
	if err := start(noBOS, runfile.TestFresh); err == nil || !strings.Contains(err.Error(), docs[7].ID) || !strings.Contains(err.Error(), "BOS") {
		t.Errorf("a baseline scored without BOS: %v", err)
	}
	_, tr, err := StartSequential(base, runfile.TestFresh, sequential.DefaultSeed, 0.95, 0.002, "")
	if err != nil {
		t.Fatal(err)
	}
	d := docs[0]
	d.Bytes++
	if err := tr.Add(d); err == nil || !strings.Contains(err.Error(), d.ID) {
		t.Errorf("a head document with other bytes: %v", err)
	}
	if err := tr.Add(runfile.Doc{ID: "elsewhere", Bytes: 10, Tokens: 3, Bits: 9}); err == nil || !strings.Contains(err.Error(), "not in the baseline") {
		t.Errorf("a document the baseline lacks: %v", err)
	}
	if err := tr.Add(docs[1]); err != nil {
		t.Fatal(err)
	}
	if err := tr.Add(docs[1]); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a document given twice: %v", err)
	}
}

// Replayed against another full baseline than the one it decided against,
// a sequential run is still judged by its sequence, and the comparison
// says so.
func TestSequentialAgainstAnotherBaseline(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(300, 4, 0.9, 0.1)
	base := comparetest.FreshRun("base", "m", docs)
	other := comparetest.FreshRun("other", "m", comparetest.Jittered(docs, 9, 0.001))
	head := comparetest.SequentialHead(base, comparetest.FreshRun("head", "m", comparetest.Shifted(docs, 0.05)), 120, 0.002)
	c, err := Runs(other, head, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sequential == nil || c.Sequential.Scored != 120 || c.Verdict != Regressed {
		t.Errorf("sequential %+v verdict %s", c.Sequential, c.Verdict)
	}
	if !strings.Contains(strings.Join(c.Notes, " "), "replays it against run other") {
		t.Errorf("notes %q", c.Notes)
	}
}

// A document far beyond the residual bound the rule assumes breaks it: the
// tracker names the document, never decides after it, and ends with the
// exact value; compare says so, and a run that stopped early after the
// break falls back to the fixed-sample interval.
func TestTrackerAssumptionBroken(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(400, 7, 0.9, 0.1)
	base := comparetest.FreshRun("base", "m", docs)
	h, tr, err := StartSequential(base, runfile.TestFresh, sequential.DefaultSeed, 0.95, 0.01, "")
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(docs))
	byID := map[string]runfile.Doc{}
	for i, d := range docs {
		ids[i], byID[d.ID] = d.ID, d
	}
	order := tr.Order(ids, h.Seed)
	first, _ := sequential.TakeAll(func() []float64 {
		w := make([]float64, len(docs))
		for i, d := range docs {
			w[i] = float64(d.Bytes)
		}
		return w
	}())
	// the first document of the random part changes by 3 bits per byte,
	// far beyond the bound the rule assumes
	odd := order[len(first)]
	headDocs := append([]runfile.Doc(nil), docs...)
	for i := range headDocs {
		if headDocs[i].ID == odd {
			headDocs[i].Bits += 3 * float64(headDocs[i].Bytes)
		}
	}
	hd := map[string]runfile.Doc{}
	for _, d := range headDocs {
		hd[d.ID] = d
	}
	for i, id := range order {
		if err := tr.Add(hd[id]); err != nil {
			t.Fatal(err)
		}
		if i == len(first)+1 && !strings.Contains(tr.Broken(), odd) {
			t.Fatalf("after document %s: broken %q, want it named", odd, tr.Broken())
		}
		if r := tr.Decision(); i < len(order)-1 && r != "" {
			t.Fatalf("decided %q after %d of %d with the assumption broken at %d", r, i+1, len(order), len(first)+1)
		}
	}
	if r := tr.Decision(); r != sequential.Complete {
		t.Errorf("after the last document: %q, want %q", r, sequential.Complete)
	}
	head := comparetest.FreshRun("head", "m", headDocs)
	full := comparetest.SequentialHead(base, head, len(docs), 0.01)
	c, err := Runs(base, full, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sequential == nil || c.Sequential.Reason != sequential.Complete || !strings.Contains(c.Sequential.Broken, odd) ||
		!strings.Contains(strings.Join(c.Notes, " "), "assumption failed") {
		t.Errorf("whole run: sequential %+v, notes %q", c.Sequential, c.Notes)
	}
	part := comparetest.SequentialHead(base, head, len(first)+100, 0.01)
	c, err = Runs(base, part, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sequential != nil || !strings.Contains(strings.Join(c.Notes, " "), "fixed-sample bootstrap") {
		t.Errorf("stopped after the break: sequential %+v, notes %q", c.Sequential, c.Notes)
	}
}

// A shard's deal of a Fresh Text order holds only some of the longest
// documents, so its tracker never decides alone and shows no interval;
// the merged shards replayed in the whole order do.
func TestTrackerShardDealNeverDecides(t *testing.T) {
	t.Parallel()
	docs := comparetest.SynthDocs(400, 8, 0.9, 0.1)
	for i := range 12 { // a dozen long documents: the take-all stratum
		docs[i].Bytes, docs[i].Tokens, docs[i].Bits = 20*docs[i].Bytes, 20*docs[i].Tokens, 20*docs[i].Bits
	}
	base := comparetest.FreshRun("base", "m", docs)
	head := comparetest.Shifted(docs, 0.3) // a change any whole-order run decides at once
	byID := map[string]runfile.Doc{}
	ids := make([]string, len(head))
	for i, d := range head {
		byID[d.ID], ids[i] = d, d.ID
	}
	h, tr, err := StartSequential(base, runfile.TestFresh, sequential.DefaultSeed, 0.95, 0.01, "")
	if err != nil {
		t.Fatal(err)
	}
	order := tr.Order(ids, h.Seed)
	for p := 0; p < len(order); p += 2 { // shard 1 of 2
		if err := tr.Add(byID[order[p]]); err != nil {
			t.Fatal(err)
		}
		if r := tr.Decision(); r != "" || tr.Interval() != [2]float64{} {
			t.Fatalf("shard 1 of 2 after %d records: decision %q, interval %v", tr.Scored(), r, tr.Interval())
		}
	}
	_, whole, err := StartSequential(base, runfile.TestFresh, sequential.DefaultSeed, 0.95, 0.01, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range order {
		if err := whole.Add(byID[id]); err != nil {
			t.Fatal(err)
		}
		if whole.Decision() != "" {
			break
		}
	}
	if r := whole.Decision(); r != sequential.Beyond || whole.Scored() == len(order) {
		t.Errorf("the whole order: %q after %d of %d", r, whole.Scored(), len(order))
	}
}
