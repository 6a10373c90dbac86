package action

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/contamination"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// maxListed bounds the items the comment lists; the report has them all.
const maxListed = 50

// scanned is the training-data scan: its report and the file that holds
// it (each run header names the file); zero without a scan.
type scanned struct {
	report *contamination.Report
	path   string
}

// scan runs the training-data scan before scoring, so that every run
// header records what it found.
func (r *actionRun) scan(ctx context.Context) (scanned, error) {
	in := r.in
	if len(in.TrainingData) == 0 {
		return scanned{}, nil
	}
	if r.d.Scan == nil {
		return scanned{}, errors.New("input training-data: this build cannot scan training data")
	}
	r.a.Group("Contamination scan of the training data")
	defer r.a.EndGroup()
	if err := os.MkdirAll(in.WorkDir, 0o755); err != nil {
		return scanned{}, err
	}
	out := filepath.Join(in.WorkDir, "contamination.json")
	rep, err := r.d.Scan(ctx, ScanRequest{Train: in.TrainingData, Tests: in.Tests, FreshData: in.FreshData, ProbeItems: in.ProbeItems, Out: out})
	if err != nil {
		return scanned{}, fmt.Errorf("contamination scan: %w", err)
	}
	r.a.Infof("contamination: %s", rep.Line())
	return scanned{report: rep, path: out}, nil
}

// contaminationView is what the comment shows of the scan: the line, the
// items, and each comparison again on the items not found.
func (r *actionRun) contaminationView(comparisons []*compare.Comparison, scan scanned, bases map[string]*runfile.Run, heads map[string]*runfile.Run) *report.Contamination {
	rep := scan.report
	if rep == nil {
		return nil
	}
	x := &report.Contamination{Line: rep.Line()}
	for i, it := range rep.Items {
		if i == maxListed {
			x.Items = append(x.Items, fmt.Sprintf("… and %d more (the report, %s, lists them all)", len(rep.Items)-maxListed, filepath.Base(scan.path)))
			break
		}
		x.Items = append(x.Items, fmt.Sprintf("%s %s: %d of %d %d-grams, first at %s: %q", it.Test, it.ID, it.Matched, it.NGrams, rep.N, where(it.First), it.First.Text))
	}
	for _, c := range comparisons {
		ids := rep.Contaminated(c.Test, rep.MinFraction)
		if len(ids) == 0 {
			continue
		}
		clean, err := compare.Runs(without(bases[c.Test], ids), without(heads[c.Test], ids), r.compareOptions())
		if err != nil {
			r.warn("no clean comparison", "%s without the %d items found: %v", c.Test, len(ids), err)
			continue
		}
		x.Clean = append(x.Clean, clean)
	}
	return x
}

func where(l contamination.Location) string {
	if l.Row > 0 {
		return fmt.Sprintf("%s row %d", l.File, l.Row)
	}
	return fmt.Sprintf("%s line %d", l.File, l.Line)
}

// without returns a copy of run holding none of the records ids names.
func without(run *runfile.Run, ids []string) *runfile.Run {
	drop := func(id string) bool { _, ok := slices.BinarySearch(ids, id); return ok }
	out := *run
	out.Docs = slices.DeleteFunc(slices.Clone(run.Docs), func(d runfile.Doc) bool { return drop(d.ID) })
	out.Items = slices.DeleteFunc(slices.Clone(run.Items), func(it runfile.Item) bool { return drop(it.ID) })
	return &out
}
