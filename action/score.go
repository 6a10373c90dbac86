package action

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/fetch"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// scored is the model fetched and its runs, with the files they were
// written to, in the order of the tests.
type scored struct {
	model fetch.Model
	runs  []*runfile.Run
	files []string
}

// scoreHeads fetches the model and scores every requested test, each
// run header naming the scan's report (scanPath, "" for none); a test with
// a baseline in early is scored until decided. On an error it returns the
// runs scored before it.
func (r *actionRun) scoreHeads(ctx context.Context, scanPath string, early map[string]*runfile.Run) (scored, error) {
	in := r.in
	r.a.Group("Fetch model " + in.Model)
	head, err := r.model(ctx, in.Revision)
	r.a.EndGroup()
	out := scored{model: head}
	if err != nil {
		return out, err
	}
	if in.FreshData == "" && slices.Contains(in.Tests, runfile.TestFresh) {
		r.a.WithFieldsMap(map[string]string{"title": "udgam-ci: smoke sample"}).Noticef(
			"fresh-data is empty, so Fresh Text scores the embedded smoke sample, not the benchmark; set fresh-data to the published set at a pinned commit")
	}
	for _, test := range in.Tests {
		r.a.Group("Score " + test + ": " + in.ModelName)
		file := filepath.Join(in.WorkDir, test+"-head.jsonl")
		run, err := r.score(ctx, test, head, file, r.headGit(), scanPath, r.sequential(test, early))
		r.a.EndGroup()
		if err != nil {
			return out, err
		}
		out.runs = append(out.runs, run)
		out.files = append(out.files, file)
	}
	return out, nil
}

// model returns the GGUF to score and what the run header should say of it.
func (r *actionRun) model(ctx context.Context, revision string) (fetch.Model, error) {
	in := r.in
	switch {
	case isLocal(in.Model) && strings.HasSuffix(in.Model, ".gguf"):
		// A GGUF made by `udgam-ci model fetch` says where it came from.
		conv, err := convert.ReadConversion(in.Model)
		if err != nil {
			return fetch.Model{}, err
		}
		return fetch.Model{Path: in.Model, Model: runfile.Model{Name: in.ModelName, Revision: revision,
			File: filepath.Base(in.Model), Conversion: conv}}, nil
	case isLocal(in.Model):
		out := filepath.Join(in.WorkDir, "model-"+in.Dtype+".gguf")
		m, res, err := fetch.Convert(in.Model, out, convert.Options{Dtype: in.Dtype, Subfolder: in.Subfolder, AllowUnverifiedTokenizer: in.AllowUnverifiedTokenizer})
		if err != nil {
			return fetch.Model{}, err
		}
		r.a.Infof("converted %s to %s (%s, sha256 %s)", in.Model, out, in.Dtype, res.SHA256)
		for _, line := range res.Tokenizer.Report {
			r.a.Infof("  %s", line)
		}
		m.Model.Name, m.Model.Revision = in.ModelName, revision
		return m, nil
	}
	if r.hub == nil {
		return fetch.Model{}, errors.New("no hub client to fetch " + in.Model)
	}
	m, err := fetch.Fetch(ctx, r.hub, fetch.Options{
		Repo: in.Model, Revision: revision, AllowUnpinned: in.AllowUnpinned, Dtype: in.Dtype,
		CacheDir: filepath.Join(in.CacheDir, "models"), Subfolder: in.Subfolder, AllowUnverifiedTokenizer: in.AllowUnverifiedTokenizer,
	})
	if err != nil {
		return m, err
	}
	if m.Model.Revision != revision {
		r.a.Noticef("%s revision %s resolved to commit %s", in.Model, revision, m.Model.Revision)
	}
	m.Model.Name = in.ModelName
	r.a.Infof("model %s@%s: %s (sha256 %s)", in.Model, m.Model.Revision, m.Path, m.Model.SHA256)
	return m, nil
}

// headGit is the training repository's commit the head runs belong to.
func (r *actionRun) headGit() runfile.Git {
	var pr *int
	if r.ev.PR != 0 {
		n := r.ev.PR
		pr = &n
	}
	return runfile.Git{Repo: r.ev.Repo, SHA: r.ev.SHA, Ref: r.ev.Ref, PR: pr}
}

// score runs one test and records the model's origin in the run header.
func (r *actionRun) score(ctx context.Context, test string, m fetch.Model, out string, git runfile.Git, scanPath string, seq *SequentialRequest) (*runfile.Run, error) {
	in := r.in
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	req := in.scoreRequest(test)
	req.Model, req.Out = m.Path, out
	req.ModelName, req.ModelRevision = m.Model.Name, m.Model.Revision
	req.Git, req.Contamination, req.Sequential = git, scanPath, seq
	run, err := r.d.Scorer.Score(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("score %s of %s: %w", test, in.ModelName, err)
	}
	if u := run.Header.Reused; u != nil {
		r.a.Noticef("%s of %s: %s", test, in.ModelName, u.Line())
	}
	// The scorer knows the GGUF; only the fetch knows where it came from.
	hm := &run.Header.Model
	hm.Name = m.Model.Name
	if m.Model.Revision != "" {
		hm.Revision = m.Model.Revision
	}
	if hm.Dtype == "" {
		hm.Dtype = m.Model.Dtype
	}
	if m.Model.Conversion != nil {
		hm.Conversion = m.Model.Conversion
	}
	if err := runfile.WriteFile(out, run); err != nil {
		return nil, fmt.Errorf("record model origin in %s: %w", out, err)
	}
	return run, nil
}

// scoreRequest is what every run of test is scored with, from the inputs:
// its data, variants and settings (r.score adds the model, where the run
// goes and the scan).
func (in *Inputs) scoreRequest(test string) ScoreRequest {
	data := in.FreshData
	if test == runfile.TestProbes {
		data = in.ProbeItems
	}
	return ScoreRequest{Test: test, Data: data, Variants: in.ProbeVariants, Settings: in.settings()}
}
