package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// DefaultMaxAuditBody bounds an audit upload, compressed and gunzipped:
// its report and four run files, each of the full sets' runs a few MB.
const DefaultMaxAuditBody = 64 << 20

func auditPath(id string) string { return "/audits/" + url.PathEscape(id) }

// uploadAudit stores an artifact audit (POST /api/v1/audits), with the
// token, the bounds on uploads read at once and the body's time limit of
// a run's upload. The upload carries the report and the four run files it
// was judged from; every figure is recomputed from the runs with the
// CLI's code (audit.Rejudge) and judged under this server's limits, and
// both sides' scores are checked against stored runs of the same model
// file (checkStored), all before the one write, so a refused upload
// leaves the database as it was.
func (s *Server) uploadAudit(c echo.Context) error {
	ctx := c.Request().Context()
	tok, release, err := s.startUpload(c)
	if err != nil {
		return err
	}
	defer release()
	mt, params, err := mime.ParseMediaType(c.Request().Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return badRequest("an audit is uploaded with the run files it was judged from: multipart/form-data with the parts %q, %s (udgam-ci audit push and the Action send them)",
			client.AuditReportPart, strings.Join(audit.RunFileNames[:], ", "))
	}
	body, gz, tooBig, err := s.openBody(c, s.cfg.MaxAuditBody)
	if err != nil {
		return err
	}
	rep, runs, err := s.readAudit(multipart.NewReader(body, params["boundary"]))
	if errors.Is(err, audit.ErrTooLarge) {
		return echo.NewHTTPError(http.StatusRequestEntityTooLarge, err.Error())
	}
	if err != nil {
		return s.bodyError(err, gz, tooBig)
	}
	if rep.Git.Repo == "" {
		return badRequest("audit report: git.repo is empty: name the training repository (audit artifact --git-repo OWNER/NAME; the Action fills it)")
	}
	if rep.Git.Repo != tok.Repo {
		return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("this token uploads for %s only; the audit is of %s", tok.Repo, rep.Git.Repo))
	}
	judged, err := audit.Rejudge(rep, runs, *s.cfg.AuditLimits)
	if err != nil {
		return badRequest("audit report: %v", err)
	}
	if judged.Verified, err = s.checkStored(ctx, runs); err != nil {
		return err
	}
	canon, err := json.Marshal(judged)
	if err != nil {
		return fmt.Errorf("audit: encode: %w", err)
	}
	a, created, err := s.store.PutAudit(ctx, store.NewAudit{Model: judged.Reference.Name, Revision: judged.Reference.Revision,
		Git: judged.Git, Artifact: judged.ArtifactName(), Verdict: string(judged.Verdict), Report: canon})
	if err != nil {
		return err
	}
	runIDs, err := s.store.CommitRunIDs(ctx, a.Repo, a.Model, a.Revision, a.SHA)
	if err != nil {
		return err
	}
	if created {
		s.notifyAudit(a, judged)
	}
	s.log.Info("audit stored", "id", a.ID, "created", created, "model", a.Model, "verdict", a.Verdict, "runs", len(runIDs))
	out := client.AuditUploadResult{ID: a.ID, URL: s.absURL(auditPath(a.ID)), Created: created, Repo: a.Repo,
		Model: a.Model, Revision: a.Revision, SHA: a.SHA, Verdict: a.Verdict, Runs: runIDs}
	if out.Runs == nil {
		out.Runs = []string{}
	}
	code := http.StatusCreated
	if !created {
		code = http.StatusOK
	}
	return c.JSON(code, out)
}

// readAudit reads an audit upload's parts: the report, checked whole
// (audit.Decode), and each run file, checked as a run upload is.
func (s *Server) readAudit(mr *multipart.Reader) (*audit.Report, audit.RunFiles, error) {
	var rep *audit.Report
	var runs audit.RunFiles
	slots := runs.All()
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, runs, fmt.Errorf("audit upload: %w", err)
		}
		name := part.FormName()
		i := slices.Index(audit.RunFileNames[:], name)
		switch {
		case name == client.AuditReportPart && rep == nil:
			if rep, err = audit.Decode(part, "upload"); err != nil {
				return nil, runs, err
			}
		case i >= 0 && *slots[i] == nil:
			r, err := runfile.ReadWith(part, name, runfile.Options{MaxRecords: s.cfg.MaxRecords})
			if err != nil {
				return nil, runs, err
			}
			if _, err := checkRun(s.store, r, store.PutOptions{}); err != nil {
				return nil, runs, fmt.Errorf("%s: %w", name, err)
			}
			*slots[i] = r
		default:
			return nil, runs, fmt.Errorf("audit upload: part %q: want each of %q, %s once", name, client.AuditReportPart, strings.Join(audit.RunFileNames[:], ", "))
		}
	}
	if rep == nil {
		return nil, runs, fmt.Errorf("audit upload: no %q part", client.AuditReportPart)
	}
	for i, p := range slots {
		if *p == nil {
			return nil, runs, fmt.Errorf("audit upload: no %q part: an audit is recomputed from its four run files", audit.RunFileNames[i])
		}
	}
	return rep, runs, nil
}

// checkStored refuses an audit whose runs scored otherwise than a stored
// run of the same model file (sha256) and judged settings, the
// reference's and the artifact's alike: the audit would otherwise stand
// beside those runs with other numbers, or pass another model's runs off
// as the artifact's. It returns the run files it found records of in
// those stored runs, scored the same; the others' scores are the
// uploader's.
func (s *Server) checkStored(ctx context.Context, runs audit.RunFiles) ([]string, error) {
	var verified []string
	for i, p := range runs.All() {
		run, h := *p, &(*p).Header
		if h.Model.SHA256 == "" {
			continue
		}
		ids, err := s.store.ModelFileRuns(ctx, h.Git.Repo, h.Model.Name, h.Test, h.Model.SHA256)
		if err != nil {
			return nil, err
		}
		seen := false
		for _, id := range ids {
			stored, err := s.store.LoadRun(ctx, id)
			if err != nil {
				return nil, err
			}
			if len(runfile.Mismatch(stored.Header, *h)) > 0 {
				continue
			}
			diff, common := differingRecord(stored, run)
			if diff != "" {
				return nil, badRequest("audit: %s: the %s's %s scores are not those of stored run %s of the same model file (sha256 %.12s) and settings: %s",
					audit.RunFileNames[i], auditSide(i), h.Test, id, h.Model.SHA256, diff)
			}
			seen = seen || common > 0
		}
		if seen {
			verified = append(verified, audit.RunFileNames[i])
		}
	}
	return verified, nil
}

// auditSide names the side of the audit the i-th of audit.RunFileNames
// belongs to.
func auditSide(i int) string {
	if i == 0 || i == 2 {
		return "reference"
	}
	return "artifact"
}

// differingRecord names the first record both runs hold that they scored
// differently ("" when none), and counts the records both hold: the same
// model file with the same settings scores every record the same.
func differingRecord(a, b *runfile.Run) (string, int) {
	common := 0
	docs := make(map[string]runfile.Doc, len(a.Docs))
	for _, d := range a.Docs {
		docs[d.ID] = d
	}
	for _, d := range b.Docs {
		x, ok := docs[d.ID]
		if !ok {
			continue
		}
		if x.Bytes != d.Bytes || math.Abs(x.Bits-d.Bits) > 1e-6*max(1, math.Abs(x.Bits)) {
			return fmt.Sprintf("document %s: %g bits over %d bytes there, %g over %d here", d.ID, x.Bits, x.Bytes, d.Bits, d.Bytes), common
		}
		common++
	}
	items := make(map[string]runfile.Item, len(a.Items))
	for _, it := range a.Items {
		items[it.ID] = it
	}
	for _, it := range b.Items {
		x, ok := items[it.ID]
		if !ok {
			continue
		}
		if x.Pred != it.Pred || x.Correct != it.Correct {
			return fmt.Sprintf("item %s: answered %d there, %d here", it.ID, x.Pred, it.Pred), common
		}
		common++
	}
	return "", common
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
	// Claim says what the uploader judged under limits of their own,
	// when they differ from this server's: shown as theirs, never as the
	// verdict.
	Claim string
	// Unverified says whose scores this server could not check against
	// stored runs of the same model file: the uploader's, said as such.
	Unverified string
	// First marks the title and verdict to come first on a phone: on the
	// audit's own page, not where it sits beside a run.
	First bool
}

func newAuditView(a *store.Audit) (auditView, error) {
	// Stored reports were checked at upload; one that no longer decodes
	// is the server's fault, said as such.
	rep, err := audit.Decode(bytes.NewReader(a.Report), a.ID)
	if err != nil {
		return auditView{}, fmt.Errorf("stored %w", err)
	}
	v := auditView{Audit: a, URL: auditPath(a.ID), Section: rep.Section(), Unverified: unverified(rep)}
	if c := rep.Claimed; c != nil {
		v.Claim = fmt.Sprintf("The uploader's claim, not this server's verdict: under their own limits (bits per byte +%g, accuracy −%g points) they judged it %s.",
			c.Limits.BPB, c.Limits.Accuracy, strings.ToUpper(string(c.Verdict)))
	}
	return v, nil
}

// unverified names the runs of an audit whose records this server found
// in no stored run of the same model file and settings (Report.Verified),
// side by side: their scores are the uploader's. "" when it checked all.
func unverified(rep *audit.Report) string {
	var out []string
	for _, side := range []struct {
		name  string
		s     audit.Side
		files [2]string
	}{
		{"reference", rep.Reference, [2]string{audit.RefFreshFile, audit.RefProbesFile}},
		{"artifact", rep.Artifact, [2]string{audit.ArtFreshFile, audit.ArtProbesFile}},
	} {
		var tests []string
		for k, f := range side.files {
			if !slices.Contains(rep.Verified, f) {
				tests = append(tests, [2]string{"Fresh Text", "Probe Suite"}[k])
			}
		}
		what := "runs are"
		switch {
		case len(tests) == 0:
			continue
		case len(tests) == 1:
			what = tests[0] + " run is"
		}
		file := side.s.File
		if side.s.SHA256 != "" {
			file += fmt.Sprintf(" (sha256 %.12s)", side.s.SHA256)
		}
		out = append(out, fmt.Sprintf("The %s's %s the uploader's, unverified: this server held no run of %s with the audit's settings to check them against.",
			side.name, what, file))
	}
	return strings.Join(out, " ")
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
	v.First = true
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
