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
	head := comparetest.SequentialHead(base, comparetest.FreshRun("head", "m", comparetest.Shifted(docs, 0.02)), 120, 0.002)
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
