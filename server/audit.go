package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// DefaultMaxAuditBody bounds an audit upload, compressed and gunzipped: a
// report of the core set's 7 types and 21 levels is about 25 KB.
const DefaultMaxAuditBody = 1 << 20

func auditPath(id string) string { return "/audits/" + url.PathEscape(id) }

// uploadAudit stores an artifact audit's report (POST /api/v1/audits),
// with the token, the bounds on uploads read at once and the body's time
// limit of a run's upload. The report is checked whole (audit.Decode:
// complete, consistent with its own comparisons) before the one write,
// so a refused upload leaves the database as it was.
func (s *Server) uploadAudit(c echo.Context) error {
	ctx := c.Request().Context()
	tok, release, err := s.startUpload(c)
	if err != nil {
		return err
	}
	defer release()
	body, gz, tooBig, err := s.openBody(c, s.cfg.MaxAuditBody)
	if err != nil {
		return err
	}
	rep, err := audit.Decode(body, "upload")
	if err != nil {
		return s.bodyError(err, gz, tooBig)
	}
	if rep.Git.Repo == "" {
		return badRequest("audit report: git.repo is empty: name the training repository (audit artifact --git-repo OWNER/NAME; the Action fills it)")
	}
	if rep.Git.Repo != tok.Repo {
		return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("this token uploads for %s only; the audit is of %s", tok.Repo, rep.Git.Repo))
	}
	canon, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("audit: encode: %w", err)
	}
	a, created, err := s.store.PutAudit(ctx, store.NewAudit{Model: rep.Reference.Name, Revision: rep.Reference.Revision,
		Git: rep.Git, Artifact: rep.ArtifactName(), Verdict: string(rep.Verdict), Report: canon})
	if err != nil {
		return err
	}
	runs, err := s.store.CommitRunIDs(ctx, a.Repo, a.Model, a.Revision, a.SHA)
	if err != nil {
		return err
	}
	s.log.Info("audit stored", "id", a.ID, "created", created, "model", a.Model, "verdict", a.Verdict, "runs", len(runs))
	out := client.AuditUploadResult{ID: a.ID, URL: s.absURL(auditPath(a.ID)), Created: created, Repo: a.Repo,
		Model: a.Model, Revision: a.Revision, SHA: a.SHA, Verdict: a.Verdict, Runs: runs}
	if out.Runs == nil {
		out.Runs = []string{}
	}
	code := http.StatusCreated
	if !created {
		code = http.StatusOK
	}
	return c.JSON(code, out)
}

// visibleAudit is the audit the path's :id names, if the reader may see it.
func (s *Server) visibleAudit(c echo.Context) (*store.Audit, error) {
	id, err := url.PathUnescape(c.Param("id"))
	if err == nil {
		err = store.ValidID(id)
	}
	if err != nil {
		return nil, echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("audit id: %v", err))
	}
	a, err := s.store.GetAudit(c.Request().Context(), id)
	if err != nil {
		return nil, err
	}
	if scope := s.scope(c); scope != "" && a.Repo != scope {
		return nil, fmt.Errorf("audit %s: %w", id, store.ErrNotFound)
	}
	return a, nil
}

// apiAudit is GET /api/v1/audits/:id: the stored audit and its report.
func (s *Server) apiAudit(c echo.Context) error {
	a, err := s.visibleAudit(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, client.Audit{ID: a.ID, Repo: a.Repo, Model: a.Model, Revision: a.Revision, SHA: a.SHA,
		Ref: a.Ref, PR: a.PR, Artifact: a.Artifact, Verdict: a.Verdict, UploadedAt: a.UploadedAt, Report: a.Report})
}

// auditView is one audit as the pages show it: the cells of audit.Section,
// the same the terminal table and the PR comment's section show.
type auditView struct {
	*store.Audit
	URL     string
	Section audit.Section
}

func newAuditView(a *store.Audit) (auditView, error) {
	// Stored reports were checked at upload; one that no longer decodes
	// is the server's fault, said as such.
	rep, err := audit.Decode(bytes.NewReader(a.Report), a.ID)
	if err != nil {
		return auditView{}, fmt.Errorf("stored %w", err)
	}
	return auditView{Audit: a, URL: auditPath(a.ID), Section: rep.Section()}, nil
}

// auditPage is /audits/:id.
func (s *Server) auditPage(c echo.Context) error {
	a, err := s.visibleAudit(c)
	if err != nil {
		return err
	}
	v, err := newAuditView(a)
	if err != nil {
		return err
	}
	runs, err := s.store.CommitRunIDs(c.Request().Context(), a.Repo, a.Model, a.Revision, a.SHA)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, "audit", map[string]any{"A": v, "Runs": runs})
}

// commitAudits are the audit views of a run's model at its commit.
func (s *Server) commitAudits(c echo.Context, r *store.Run) ([]auditView, error) {
	as, err := s.store.CommitAudits(c.Request().Context(), r.Repo, r.Model, r.Revision, r.SHA)
	if err != nil {
		return nil, err
	}
	out := make([]auditView, 0, len(as))
	for i := range as {
		v, err := newAuditView(&as[i])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
