package contamination

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/udgamlabs/udgam-ci/hub"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Hub is what a hub dataset scan needs of hub's Client.
type Hub interface {
	ListFiles(ctx context.Context, kind hub.Kind, repo, sha string) ([]hub.File, error)
	Download(ctx context.Context, kind hub.Kind, repo, sha string, f hub.File) (string, error)
}

// HubInputs lists the data files of hf://OWNER/NAME@SHA[/path] (a file or
// a folder), each downloaded only when a worker comes to scan it and
// removed after, so that scanning starts at once and a corpus never has to
// fit on disk. The revision must be a commit: a scan says what it read.
func HubInputs(ctx context.Context, c Hub, ref string) ([]Input, error) {
	r, err := hub.ParseRef(ref)
	if err != nil {
		return nil, err
	}
	if !runfile.IsCommit(r.Revision) {
		return nil, fmt.Errorf("training data %s: revision %q is not a commit sha (pin one, so that the scan says what it read)", ref, r.Revision)
	}
	kind := r.Kind
	if kind == "" {
		kind = hub.Dataset
	}
	files, err := c.ListFiles(ctx, kind, r.Repo, r.Revision)
	if err != nil {
		return nil, fmt.Errorf("training data %s: %w", ref, err)
	}
	var out []Input
	for _, f := range files {
		if r.Path != "" && f.Path != r.Path && !strings.HasPrefix(f.Path, strings.TrimSuffix(r.Path, "/")+"/") {
			continue
		}
		format, comp, ok := classify(f.Path)
		if !ok {
			continue
		}
		f := f
		out = append(out, Input{
			Path:   hub.Ref{Kind: kind, Repo: r.Repo, Revision: r.Revision, Path: f.Path}.String(),
			Size:   f.ContentSize(),
			Format: format, Compression: comp,
			open: func(ctx context.Context) (*os.File, func(), error) {
				p, err := c.Download(ctx, kind, r.Repo, r.Revision, f)
				if err != nil {
					return nil, nil, err
				}
				fh, err := os.Open(p)
				if err != nil {
					return nil, nil, err
				}
				return fh, func() { fh.Close(); os.Remove(p) }, nil
			},
		})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("training data %s: no .jsonl, .parquet or .txt files (optionally .gz or .zst) there", ref)
	}
	return out, nil
}
