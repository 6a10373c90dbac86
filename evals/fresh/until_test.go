package fresh

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// Fresh Text scored until decided: the documents in the seeded order, and
// the engine stopped at the decision or the budget, the stop in the header.
func TestRunUntilDecided(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := genData(200)
	base, err := Run(context.Background(), newByteModel(3), runOptions(data, filepath.Join(dir, "base.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(base.Run.Docs))
	weights := make([]float64, len(base.Run.Docs))
	for i, d := range base.Run.Docs {
		ids[i], weights[i] = d.ID, float64(d.Bytes)
	}
	_, probe, err := compare.StartSequential(base.Run, runfile.TestFresh, sequential.DefaultSeed, 0.95, 0.01, "")
	if err != nil {
		t.Fatal(err)
	}
	// the longest documents first, then the seeded random order
	order := probe.Order(ids, sequential.DefaultSeed)
	first, _ := sequential.TakeAll(weights)
	for _, tc := range []struct {
		name      string
		seed      int64
		minEffect float64
		budget    int
		reason    string
		scored    int
	}{
		// the same model: every difference is 0, inside ±0.01 before the
		// end (scored 0: anywhere after the minimum and before the last
		// of the records, spans here, the pilot's tenth of them included)
		{"same model", 3, 0.01, 0, sequential.Within, 0},
		// a budget below the fewest records a decision needs
		{"budget", 4, 0.01, 30, sequential.Budget, 30},
	} {
		h, tr, err := compare.StartSequential(base.Run, runfile.TestFresh, sequential.DefaultSeed, 0.95, tc.minEffect, "")
		if err != nil {
			t.Fatal(err)
		}
		o := runOptions(data, filepath.Join(dir, tc.name+".jsonl"))
		o.Selection.Until = &evals.Until{Header: h, Tracker: tr, MaxRecords: tc.budget}
		res, err := Run(context.Background(), newByteModel(tc.seed), o)
		if err != nil {
			t.Fatal(err)
		}
		st := res.Run.Header.Sequential.Stop
		want := tc.scored
		if want == 0 && st != nil && st.Scored >= len(first)+sequential.DefaultMinRecords && st.Scored < h.Total {
			want = st.Scored
		}
		if st == nil || st.Reason != tc.reason || st.Scored != want || res.Run.Len() != want {
			t.Fatalf("%s: stop %+v with %d records, want %s after %d (0: after %d and before %d)", tc.name, st, res.Run.Len(), tc.reason, tc.scored, len(first)+sequential.DefaultMinRecords, h.Total)
		}
		got := make([]string, len(res.Run.Docs))
		for i, d := range res.Run.Docs {
			got[i] = d.ID
		}
		if !slices.Equal(got, order[:want]) {
			t.Errorf("%s: documents not in the seeded order", tc.name)
		}
	}
}

// A head whose documents change too unevenly for the fixed bound the
// document rule assumes: against a baseline without spans (a run before
// them) the run says which documents broke it, never stops early, and
// scores every document; against one with spans the bound scales with
// the spread, and the large change is decided early, its interval holding
// the whole set's delta.
func TestRunUntilDecidedUnevenChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := genData(200)
	base, err := Run(context.Background(), newByteModel(3), runOptions(data, filepath.Join(dir, "base.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	full, err := Run(context.Background(), unevenModel(3), runOptions(data, filepath.Join(dir, "full.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	var diff, nbytes float64
	for i, d := range full.Run.Docs {
		diff += d.Bits - base.Run.Docs[i].Bits
		nbytes += float64(d.Bytes)
	}
	delta := diff / nbytes

	old := *base.Run
	old.Docs = slices.Clone(base.Run.Docs)
	for i := range old.Docs {
		old.Docs[i].Spans = nil
	}
	for _, tc := range []struct {
		name   string
		base   *runfile.Run
		reason string
	}{{"documents", &old, sequential.Complete}, {"spans", base.Run, sequential.Beyond}} {
		h, tr, err := compare.StartSequential(tc.base, runfile.TestFresh, sequential.DefaultSeed, 0.95, 0.01, "")
		if err != nil {
			t.Fatal(err)
		}
		var progress bytes.Buffer
		o := runOptions(data, filepath.Join(dir, tc.name+".jsonl"))
		o.Selection.Until = &evals.Until{Header: h, Tracker: tr}
		o.Progress = &progress
		res, err := Run(context.Background(), unevenModel(3), o)
		if err != nil {
			t.Fatal(err)
		}
		st := res.Run.Header.Sequential.Stop
		if st == nil || st.Reason != tc.reason {
			t.Fatalf("%s: stop %+v with %d of %d records, want %s", tc.name, st, res.Run.Len(), h.Total, tc.reason)
		}
		out := progress.String()
		switch tc.reason {
		case sequential.Complete:
			if res.Run.Len() != len(data.Docs) || !strings.Contains(out, "--until decided: document") || !strings.Contains(out, "will not stop early") ||
				!strings.Contains(out, tr.Broken()) {
				t.Errorf("%s: %d records; progress does not say the assumption broke (tracker: %q):\n%s", tc.name, res.Run.Len(), tr.Broken(), out)
			}
		default:
			if h.Unit != runfile.UnitSpan || st.Scored > h.Total/2 || st.CI[0] > delta || st.CI[1] < delta || strings.Contains(out, "will not stop early") {
				t.Errorf("%s: unit %q, stopped after %d of %d spans with [%g, %g], whole-set delta %g; want spans, early, holding it:\n%s",
					tc.name, h.Unit, st.Scored, h.Total, st.CI[0], st.CI[1], delta, out)
			}
		}
	}
}

// scaledModel is the base model with its log-probabilities times factor
// on about one window in every (those whose tokens sum to a multiple of
// every): documents change by different amounts per byte.
type scaledModel struct {
	*byteModel
	every  int
	factor float64
}

// unevenModel is three times worse on one window in seven.
func unevenModel(seed int64) *scaledModel { return &scaledModel{newByteModel(seed), 7, 3} }

func (m *scaledModel) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	res, err := m.byteModel.Score(ctx, reqs)
	for i, r := range reqs {
		sum := 0
		for _, tok := range r.Branches[0].Tokens {
			sum += int(tok)
		}
		if err != nil || sum%m.every != 0 {
			continue
		}
		for _, branch := range res[i] {
			for j := range branch {
				branch[j] *= m.factor
			}
		}
	}
	return res, err
}
