package action

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/client"
)

// reportServer is Server over the report server's HTTP client.
type reportServer struct{ c *client.Client }

// NewServer connects to a report server at url with an upload token.
func NewServer(url, token string, hc *http.Client) Server {
	return reportServer{c: &client.Client{BaseURL: url, Token: token, HTTP: hc}}
}

func (s reportServer) Upload(ctx context.Context, run *runfile.Run, baseRef string) (Uploaded, error) {
	var body bytes.Buffer
	if err := runfile.Encode(&body, run); err != nil {
		return Uploaded{}, err
	}
	res, err := s.c.UploadWith(ctx, &body, client.UploadOptions{BaseRef: baseRef})
	if err != nil {
		return Uploaded{}, err
	}
	return Uploaded{URL: res.URL, CompareURL: res.CompareURL, Flags: res.Flags}, nil
}

func (s reportServer) Baseline(ctx context.Context, repo, model, test, ref string) (*runfile.Run, error) {
	run, err := s.c.Baseline(ctx, repo, model, ref, test)
	if errors.Is(err, client.ErrNotFound) {
		return nil, nil // no baseline yet: the first run on a new model
	}
	return run, err
}

func (s reportServer) Anchor(ctx context.Context, repo, model, test string) (*runfile.Run, error) {
	run, err := s.c.Anchor(ctx, repo, model, test)
	if errors.Is(err, client.ErrNotFound) {
		return nil, nil // none pinned
	}
	return run, err
}

func (s reportServer) Run(ctx context.Context, id string) (*runfile.Run, error) {
	return s.c.RunFile(ctx, id)
}

func (s reportServer) UploadAudit(ctx context.Context, rep *audit.Report, dir string) (Uploaded, error) {
	up := client.AuditUpload{Runs: map[string][]byte{}}
	var err error
	if up.Report, err = json.Marshal(rep); err != nil {
		return Uploaded{}, err
	}
	for _, name := range audit.RunFileNames {
		if up.Runs[name], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
			return Uploaded{}, fmt.Errorf("the audit's run files: %w", err)
		}
	}
	res, err := s.c.UploadAudit(ctx, up)
	if err != nil {
		return Uploaded{}, err
	}
	return Uploaded{URL: res.URL}, nil
}
