package action

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/ggufspec"
	"github.com/udgamlabs/udgam-ci/internal/release"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// compare gets the baselines (those in early were fetched before
// scoring) and compares each head run with its own; it returns the
// baselines compared, by test. A test without a usable baseline is a
// warning: the scores still stand.
func (r *actionRun) compare(ctx context.Context, res *Result, scanPath string, early map[string]*runfile.Run) (map[string]*runfile.Run, error) {
	in := r.in
	if in.Baseline == BaselineServer && r.srv == nil {
		r.warn("no baseline", "baseline: server needs server-url; scores are reported without a comparison (or set baseline to revision:SHA, run files, or none)")
		return nil, nil
	}
	tests := make([]string, len(res.Heads))
	for i, h := range res.Heads {
		tests[i] = h.Header.Test
	}
	bases, err := r.baselinesOnce(ctx, tests, scanPath, early)
	if err != nil {
		return nil, err
	}
	var used map[string]*runfile.Run
	for i, head := range res.Heads {
		test := head.Header.Test
		if bases[i] == nil {
			r.warn("no baseline", "no %s baseline for %s (baseline: %s); scores are reported without a comparison", test, in.ModelName, in.Baseline)
			continue
		}
		c, err := compare.Runs(bases[i], head, r.compareOptions())
		if err != nil {
			r.warn("no comparison", "%s: %v", test, err)
			continue
		}
		res.Comparisons = append(res.Comparisons, c)
		if used == nil {
			used = map[string]*runfile.Run{}
		}
		used[test] = bases[i]
		if c.Mismatch {
			res.Mismatch = true
		}
	}
	return used, nil
}

func (r *actionRun) compareOptions() compare.Options {
	o := compare.NewOptions()
	o.Resamples, o.Seed = r.in.Resamples, compare.DefaultSeed
	o.MinEffect = compare.MinEffect{BPB: r.in.MinEffectBPB, Accuracy: r.in.MinEffectAcc}
	o.AllowSettingsMismatch = true // compared, and flagged loudly
	return o
}

// baselines returns one baseline run per test (nil where none); one
// scored here names the scan's report (scanPath) as the head runs do.
func (r *actionRun) baselines(ctx context.Context, tests []string, scanPath string) ([]*runfile.Run, error) {
	in := r.in
	out := make([]*runfile.Run, len(tests))
	switch {
	case in.Baseline == BaselineServer:
		ref := r.ev.BaseRef
		if ref == "" {
			ref = r.ev.Default
		}
		if ref == "" {
			ref = runfile.DefaultBaseRef
		}
		for i, test := range tests {
			b, err := r.srv.Baseline(ctx, r.ev.Repo, in.ModelName, test, ref)
			if err != nil {
				// The evaluation stands without it: warn, compare nothing.
				r.warn("report server unavailable", "baseline of %s from %s: %v", test, in.ServerURL, err)
				continue
			}
			out[i] = b
		}
	case strings.HasPrefix(in.Baseline, baselineRevision):
		rev := strings.TrimPrefix(in.Baseline, baselineRevision)
		if isLocal(in.Model) {
			return nil, fmt.Errorf("baseline %s: scoring another revision needs a hub model, not the local %s", in.Baseline, in.Model)
		}
		for i, test := range tests {
			b, err := r.revisionBaseline(ctx, rev, test, scanPath)
			if err != nil {
				return nil, err
			}
			out[i] = b
		}
	default:
		return runsByTest("baseline", in.Baseline, tests, runfile.ReadFile)
	}
	return out, nil
}

// runsByTest reads the runs a comma-separated list names (the baseline's
// or the anchor's), one per test, and returns them in tests' order, nil
// where none was named.
func runsByTest(what, list string, tests []string, read func(string) (*runfile.Run, error)) ([]*runfile.Run, error) {
	byTest := map[string]*runfile.Run{}
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		run, err := read(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if prev, dup := byTest[run.Header.Test]; dup {
			return nil, fmt.Errorf("%s: %s and run %s are both %s runs; give one per test", what, p, prev.Header.ID, run.Header.Test)
		}
		byTest[run.Header.Test] = run
	}
	out := make([]*runfile.Run, len(tests))
	for i, test := range tests {
		out[i] = byTest[test]
	}
	return out, nil
}

// revisionBaseline scores the model at another revision, reusing a run
// scored earlier with the same revision and settings (actions/cache keeps
// the directory between workflow runs).
func (r *actionRun) revisionBaseline(ctx context.Context, rev, test, scanPath string) (*runfile.Run, error) {
	in := r.in
	key := baselineKey(in, rev, test, ggufspec.EngineVersion(), release.Build())
	path := filepath.Join(in.CacheDir, "baselines", key+".jsonl")
	if run, err := runfile.ReadFile(path); err == nil {
		r.a.Infof("baseline %s@%s %s: cached run %s", in.Model, rev, test, path)
		return run, nil
	}
	m, err := r.model(ctx, rev)
	if err != nil {
		return nil, fmt.Errorf("baseline %s@%s: %w", in.Model, rev, err)
	}
	tmp := path + ".partial"
	// The baseline belongs to the base branch, not to this PR's commit.
	run, err := r.score(ctx, test, m, tmp, runfile.Git{Repo: r.ev.Repo, Ref: r.ev.BaseRef}, scanPath, nil)
	if err != nil {
		return nil, fmt.Errorf("baseline %s@%s: %w", in.Model, rev, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	return run, nil
}

// baselineKey names a cached baseline run by everything that decides its
// scores: how the model at rev is fetched (subfolder, dtype, a tokenizer
// allowed unverified), the request it is scored with (scoreRequest: the
// settings its header records; threads aside, which never change a
// score), the training data scanned for contamination, the engine and
// udgam-ci's own build (release.Build): a fix that changes scores is never
// compared with a baseline the code before it scored.
func baselineKey(in Inputs, rev, test, engine, build string) string {
	req := in.scoreRequest(test)
	req.Threads = 0
	b, _ := json.Marshal(struct {
		Model, Rev, Subfolder, Dtype string
		AllowUnverifiedTokenizer     bool
		Request                      ScoreRequest
		TrainingData                 []string
		Engine, Build                string
	}{in.Model, rev, in.Subfolder, in.Dtype, in.AllowUnverifiedTokenizer, req, in.TrainingData, engine, build})
	sum := sha256.Sum256(b)
	return test + "-" + hex.EncodeToString(sum[:8])
}
