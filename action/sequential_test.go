package action_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/action"
)

// until: decided on a pull request gets the baselines first and asks the
// scorer for sequential head runs against them; a push to the base branch
// still scores every record.
func TestActionUntilDecided(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.91, "probes": 55}
	o := w.run("pull_request", prPayload(8), map[string]string{"model": model, "revision": headSHA,
		"baseline": "revision:" + baseSHA, "until": "decided", "budget": "45m"})
	if o.err != nil {
		t.Fatalf("%v\n%s", o.err, o.log)
	}
	if got := strings.Join(w.scorer.calls, ", "); got != "fresh@"+baseSHA+", probes@"+baseSHA+", fresh@"+headSHA+", probes@"+headSHA {
		t.Fatalf("scorer calls %s: want the baselines first", got)
	}
	for i, q := range w.scorer.seqs {
		switch {
		case i < 2 && q != nil:
			t.Errorf("baseline run %d asked to stop early", i)
		case i >= 2 && (q == nil || q.Baseline == nil || q.Budget != "45m" || q.Baseline.Header.Test != w.scorer.calls[i][:strings.Index(w.scorer.calls[i], "@")]):
			t.Errorf("head run %s: sequential request %+v", w.scorer.calls[i], q)
		}
	}
	if len(o.res.Comparisons) != 2 {
		t.Errorf("%d comparisons, want 2", len(o.res.Comparisons))
	}

	w = newWorld(t)
	payload := fmt.Sprintf(`{"ref":"refs/heads/main","after":"%s","repository":{"full_name":%q,"default_branch":"main"}}`, strings.Repeat("8", 40), repo)
	w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.91, "probes": 55}
	o = w.run("push", payload, map[string]string{"model": model, "revision": headSHA, "until": "decided"})
	if o.err != nil {
		t.Fatalf("%v\n%s", o.err, o.log)
	}
	for i, q := range w.scorer.seqs {
		if q != nil {
			t.Errorf("push to main: run %s asked to stop early", w.scorer.calls[i])
		}
	}

	w = newWorld(t)
	if o = w.run("pull_request", prPayload(9), map[string]string{"model": model, "revision": headSHA, "until": "decided", "budget": "soon"}); o.err == nil || !strings.Contains(o.err.Error(), "budget") {
		t.Errorf("budget: soon: %v", o.err)
	}
}

// Without until or budget a pull request's heads are sequential with the
// default budget; until: all scores every record.
func TestActionUntilDecidedByDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		until      string
		sequential bool
	}{{"", true}, {"all", false}} {
		w := newWorld(t)
		w.scorer.scores[headSHA] = map[string]float64{"fresh": 0.91, "probes": 55}
		inputs := map[string]string{"model": model, "revision": headSHA, "baseline": "revision:" + baseSHA}
		if tc.until != "" {
			inputs["until"] = tc.until
		}
		o := w.run("pull_request", prPayload(8), inputs)
		if o.err != nil {
			t.Fatalf("until %q: %v\n%s", tc.until, o.err, o.log)
		}
		heads := 0
		for i, q := range w.scorer.seqs {
			if !strings.HasSuffix(w.scorer.calls[i], "@"+headSHA) {
				continue
			}
			heads++
			if got := q != nil && q.Budget == action.DefaultBudget; got != tc.sequential {
				t.Errorf("until %q: head run %s: sequential request %+v", tc.until, w.scorer.calls[i], q)
			}
		}
		if heads != 2 {
			t.Errorf("until %q: %d head runs (calls %v), want 2", tc.until, heads, w.scorer.calls)
		}
	}
}
