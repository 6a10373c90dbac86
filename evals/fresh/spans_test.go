package fresh

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// holdBack is compare's tracker with every decision but the last held
// back: a sequential run that scores every span, to follow the records.
type holdBack struct{ *compare.Tracker }

func (h holdBack) Decision() string {
	if r := h.Tracker.Decision(); r == sequential.Complete {
		return r
	}
	return ""
}

// mildModel is a fiftieth worse on one window in three: an
// uneven change small enough that orders stop apart.
func mildModel() *scaledModel { return &scaledModel{newByteModel(3), 3, 1.02} }

// wholeRuns scores data whole with the base model and with mildModel.
func wholeRuns(t *testing.T, dir string, data *Data) (base, head Result) {
	t.Helper()
	base, err := Run(context.Background(), newByteModel(3), runOptions(data, filepath.Join(dir, "base.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	head, err = Run(context.Background(), mildModel(), runOptions(data, filepath.Join(dir, "whole.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	return base, head
}

// A sequential run over spans that goes to the last span, whether in one
// go, stopped by its budget and resumed, or as two shards merged, holds
// every document's whole record to the bit once its spans are joined,
// and compares with the baseline exactly as the whole run does.
func TestSpanRunIsExactAtTheEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := genData(60)
	base, whole := wholeRuns(t, dir, data)
	want, err := compare.Runs(base.Run, whole.Run, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seqRun := func(out string, budget int, resume bool, shard *runfile.Shard) *runfile.Run {
		t.Helper()
		h, tr, err := compare.StartSequential(base.Run, runfile.TestFresh, 7, 0.95, 0, "")
		if err != nil || h.Unit != runfile.UnitSpan {
			t.Fatalf("start: unit %q, %v", h.Unit, err)
		}
		o := runOptions(data, filepath.Join(dir, out))
		o.Selection.Until = &evals.Until{Header: h, Tracker: holdBack{tr}, MaxRecords: budget}
		o.Selection.Shard, o.Resume = shard, resume
		res, err := Run(context.Background(), mildModel(), o)
		if err != nil {
			t.Fatal(err)
		}
		return res.Run
	}
	one := seqRun("one.jsonl", 0, false, nil)
	if part := seqRun("resumed.jsonl", 100, false, nil); part.Len() != 100 {
		t.Fatalf("budget of 100 spans: %d records", part.Len())
	}
	resumed := seqRun("resumed.jsonl", 0, true, nil)
	var shards []*runfile.Run
	for i := 1; i <= 2; i++ {
		shards = append(shards, seqRun(fmt.Sprintf("shard%d.jsonl", i), 0, false, &runfile.Shard{Index: i, Count: 2}))
	}
	merged, err := evals.Merge(shards)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*runfile.Run{"one go": one, "resumed": resumed, "merged shards": merged} {
		if st := r.Header.Sequential.Stop; name != "merged shards" && (st == nil || st.Reason != sequential.Complete || st.Scored != r.Header.Sequential.Total) {
			t.Errorf("%s: stop %+v, want complete after every span", name, st)
		}
		joined := map[string]runfile.Doc{}
		for _, d := range runfile.JoinSpans(r.Docs) {
			joined[d.ID] = d
		}
		for _, d := range whole.Run.Docs {
			if !reflect.DeepEqual(joined[d.ID], d) {
				t.Errorf("%s: %s joined from its spans %+v, the whole run's %+v", name, d.ID, joined[d.ID], d)
				break
			}
		}
		got, err := compare.Runs(base.Run, r, compare.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Delta != want.Delta || got.Head != want.Head || got.Base != want.Base || got.N != want.N {
			t.Errorf("%s: compared %v - %v = %v over %d, the whole run %v - %v = %v over %d", name, got.Head, got.Base, got.Delta, got.N, want.Head, want.Base, want.Delta, want.N)
		}
		if name != "merged shards" {
			rep, _, err := compare.ReplaySequential(base.Run, r)
			if err != nil || rep.Reason != sequential.Complete || rep.Scored != rep.Total || rep.CI != r.Header.Sequential.Stop.CI {
				t.Errorf("%s: replay %+v (%v), want complete with the run's own interval %v", name, rep, err, r.Header.Sequential.Stop.CI)
			}
		}
	}
}

// The scorer's sequential runs over spans stop where the simulation of
// their order stops, for 20 seeds: the spans of the two whole runs fed to
// compare/sequential in the seeded order, with the rule the tracker sets
// up; the same span, the same reason, the same interval, to the bit, and
// compare's replay agrees.
func TestSpanRunStopsWhereItsSimulationStops(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := genData(60)
	base, whole := wholeRuns(t, dir, data)
	type unit struct{ d, w float64 }
	units := map[string]unit{}
	var ids []string
	var w float64
	for i := range base.Run.Docs {
		b, h := runfile.SplitSpans(&base.Run.Docs[i]), runfile.SplitSpans(&whole.Run.Docs[i])
		for k := range b {
			units[b[k].ID] = unit{h[k].Bits - b[k].Bits, float64(b[k].Bytes)}
			ids = append(ids, b[k].ID)
			w += float64(b[k].Bytes)
		}
	}
	stops := map[int]bool{}
	for seed := uint64(1); seed <= 20; seed++ {
		const minEffect = 0.01
		pilot := min(sequential.DefaultPilot, len(ids))
		s, err := sequential.New(sequential.Config{N: len(ids), W: w, Level: 0.95, MinEffect: minEffect, First: pilot, Pilot: pilot})
		if err != nil {
			t.Fatal(err)
		}
		order := sequential.Order(ids, nil, seed)
		reason := ""
		for _, id := range order {
			if err := s.Add(units[id].d, units[id].w); err != nil {
				t.Fatal(err)
			}
			if reason, _ = s.Decision(); reason != "" {
				break
			}
		}
		lo, hi := s.Interval()

		h, tr, err := compare.StartSequential(base.Run, runfile.TestFresh, seed, 0.95, minEffect, "")
		if err != nil {
			t.Fatal(err)
		}
		o := runOptions(data, filepath.Join(dir, fmt.Sprintf("seed%d.jsonl", seed)))
		o.Selection.Until = &evals.Until{Header: h, Tracker: tr}
		res, err := Run(context.Background(), mildModel(), o)
		if err != nil {
			t.Fatal(err)
		}
		st := res.Run.Header.Sequential.Stop
		got := make([]string, len(res.Run.Docs))
		for i, d := range res.Run.Docs {
			got[i] = d.ID
		}
		if st == nil || st.Reason != reason || st.Scored != s.Scored() || st.CI != [2]float64{lo, hi} || !slices.Equal(got, order[:s.Scored()]) {
			t.Errorf("seed %d: the run stopped %+v, its simulation (%s) after %d of %d spans with [%v, %v]", seed, st, reason, s.Scored(), len(ids), lo, hi)
			continue
		}
		rep, _, err := compare.ReplaySequential(base.Run, res.Run)
		if err != nil || rep.Reason != st.Reason || rep.Scored != st.Scored || rep.CI != st.CI {
			t.Errorf("seed %d: replay %+v (%v), the run %+v", seed, rep, err, st)
		}
		// compare pairs the spans scored with the baseline's, whole
		// documents where all their spans are in
		c, err := compare.Runs(base.Run, res.Run, compare.Options{})
		if err != nil || c.Sequential == nil || c.Sequential.Unit != runfile.UnitSpan || c.CI != st.CI || c.N != len(runfile.JoinSpans(res.Run.Docs)) {
			t.Errorf("seed %d: compare %+v (%v)", seed, c, err)
		}
		stops[st.Scored] = true
		t.Logf("seed %d: %s after %d of %d spans", seed, st.Reason, st.Scored, len(ids))
	}
	if len(stops) < 5 {
		t.Errorf("the 20 seeds stopped at only %d places: the test cannot tell orders apart", len(stops))
	}
}
