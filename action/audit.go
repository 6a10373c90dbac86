package action

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/fetch"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// AuditRequest asks for the audit of an artifact against the GGUF the
// action scored, with the action's test settings.
type AuditRequest struct {
	Reference  string // GGUF path
	Artifact   string // the input: a path, an hf:// GGUF, a quantization type
	FreshData  string
	ProbeItems string
	Settings
	ModelName string
	// ModelRevision and Git file the audit, as the head runs are filed,
	// under the model's commit and the training repository's.
	ModelRevision string
	Git           runfile.Git
	Limits        audit.Limits
	Resamples     int
	Dir           string // run files and a made artifact
}

// audit runs the artifact audit of the model scored, head, when the
// artifact input asks for one; nil without.
func (r *actionRun) audit(ctx context.Context, head fetch.Model) (*audit.Report, error) {
	in := r.in
	if in.Artifact == "" {
		return nil, nil
	}
	if r.d.Audit == nil {
		return nil, errors.New("input artifact: this build cannot audit artifacts")
	}
	r.a.Group("Audit artifact " + in.Artifact)
	rep, err := r.d.Audit(ctx, AuditRequest{Reference: head.Path, Artifact: in.Artifact,
		FreshData: in.FreshData, ProbeItems: in.ProbeItems, Settings: in.settings(),
		ModelName: in.ModelName, ModelRevision: head.Model.Revision, Git: r.headGit(),
		Limits: in.MaxDegradation, Resamples: in.Resamples,
		Dir: r.auditDir()})
	r.a.EndGroup()
	if err != nil {
		return nil, fmt.Errorf("audit artifact %s: %w", in.Artifact, err)
	}
	return rep, nil
}

// auditDir holds the audit's run files and a made artifact.
func (r *actionRun) auditDir() string { return filepath.Join(r.in.WorkDir, "audit") }

// auditSection is the audit's Markdown section for the comment and the
// job summary; "" without an audit.
func auditSection(rep *audit.Report) string {
	if rep == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n")
	if err := audit.RenderMarkdown(&b, rep); err != nil {
		return ""
	}
	return b.String()
}

// uploadAudit stores the audit on the report server beside the head runs;
// like theirs, a failed upload costs the link, never the evaluation.
func (r *actionRun) uploadAudit(ctx context.Context, rep *audit.Report) []report.Link {
	if rep == nil {
		return nil
	}
	up, err := r.srv.UploadAudit(ctx, rep, r.auditDir())
	if err != nil {
		r.warn("report server unavailable", "upload of the artifact audit to %s failed; its report is in the job summary: %v", r.in.ServerURL, err)
		return nil
	}
	r.a.Infof("uploaded the artifact audit: %s", up.URL)
	return []report.Link{{Text: "artifact audit", URL: up.URL}}
}
