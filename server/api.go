package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// Page sizes of GET /models/{model}/runs.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

func runPath(id string) string { return "/runs/" + url.PathEscape(id) }

func comparePath(base, head string) string {
	return "/compare?" + url.Values{"base": {base}, "head": {head}}.Encode()
}

// modelRef names a model as the server keys it: its repository (the
// training repo, OWNER/NAME) plus its name.
type modelRef struct {
	Repo, Model string
}

// modelName takes the model name from a decoded request path after
// prefix, so both a literal slash and %2F work.
func modelName(path, prefix string) (string, error) {
	name := strings.TrimPrefix(path, prefix)
	if err := store.ValidModel(name); err != nil {
		return "", echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	return name, nil
}

// repoModelName reads OWNER/NAME/models/MODEL from a decoded request path
// after prefix.
func repoModelName(path, prefix string) (modelRef, error) {
	parts := strings.SplitN(strings.TrimPrefix(path, prefix), "/", 4)
	if len(parts) != 4 || parts[2] != "models" {
		return modelRef{}, echo.NewHTTPError(http.StatusNotFound, "no such page: want "+prefix+"OWNER/NAME/models/MODEL")
	}
	ref := modelRef{Repo: parts[0] + "/" + parts[1], Model: parts[3]}
	for _, err := range []error{store.ValidRepo(ref.Repo), store.ValidModel(ref.Model)} {
		if err != nil {
			return modelRef{}, echo.NewHTTPError(http.StatusBadRequest, err.Error())
		}
	}
	return ref, nil
}

// modelOf finds the model a request names: /repos/OWNER/NAME/models/MODEL,
// or the legacy /models/MODEL, which stands for the one repository that
// has runs of MODEL (the reader's own on a private server) and is refused
// as ambiguous when several do.
func (s *Server) modelOf(c echo.Context, path, api string) (modelRef, error) {
	if rest, ok := strings.CutPrefix(path, api+"/repos/"); ok {
		ref, err := repoModelName(rest, "")
		if err != nil {
			return ref, err
		}
		if scope := s.scope(c); scope != "" && scope != ref.Repo {
			return ref, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("no runs of model %s in %s", ref.Model, ref.Repo))
		}
		return ref, nil
	}
	model, err := modelName(path, api+"/models/")
	if err != nil {
		return modelRef{}, err
	}
	if scope := s.scope(c); scope != "" {
		return modelRef{Repo: scope, Model: model}, nil
	}
	repos, err := s.store.ModelRepos(c.Request().Context(), model)
	if err != nil {
		return modelRef{}, err
	}
	switch len(repos) {
	case 0:
		return modelRef{}, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("no runs of model %s", model))
	case 1:
		return modelRef{Repo: repos[0], Model: model}, nil
	}
	paths := make([]string, len(repos))
	for i, r := range repos {
		paths[i] = api + client.ModelPath(r, model)
	}
	return modelRef{}, echo.NewHTTPError(http.StatusConflict, fmt.Sprintf("model %s has runs in %d repositories; name one: %s", model, len(repos), strings.Join(paths, ", ")))
}

// visible hides another repository's runs from a private server's reader
// (as not found: their ids are not the reader's to learn).
func (s *Server) visible(c echo.Context, r *store.Run) error {
	if scope := s.scope(c); scope != "" && r.Repo != scope {
		return fmt.Errorf("run %s: %w", r.ID, store.ErrNotFound)
	}
	return nil
}

func runID(c echo.Context) (string, error) {
	id, err := url.PathUnescape(c.Param("id"))
	if err == nil {
		err = store.ValidID(id)
	}
	if err != nil {
		return "", echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	return id, nil
}

// visibleRun is the run the path's :id names, if the reader may see it.
func (s *Server) visibleRun(c echo.Context) (*store.Run, error) {
	id, err := runID(c)
	if err != nil {
		return nil, err
	}
	r, err := s.store.GetRun(c.Request().Context(), id)
	if err != nil {
		return nil, err
	}
	if err := s.visible(c, r); err != nil {
		return nil, err
	}
	return r, nil
}

// apiRun is GET /api/v1/runs/:id: the run without its records.
func (s *Server) apiRun(c echo.Context) error {
	r, err := s.visibleRun(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wireRun(r))
}

// wireRun is a stored run as the API sends it.
func wireRun(r *store.Run) client.Run {
	out := client.Run{
		ID: r.ID, Test: r.Test, Model: r.Model, Revision: r.Revision, Repo: r.Repo, SHA: r.SHA, Ref: r.Ref, PR: r.PR,
		StartedAt: r.StartedAt, UploadedAt: r.UploadedAt, Records: r.Records, Score: wireScore(r.Score),
		BaselineID: r.BaselineID, Flags: r.Flags, Header: r.Header, Summary: r.Summary, Invalid: r.Invalid,
		Partial: r.Partial,
	}
	if q := replayOf(r); q != nil {
		out.Stop = &runfile.Stop{Reason: q.Reason, Scored: q.Scored, CI: q.CI}
		out.Cost = &q.Cost
	}
	return out
}

func wireScore(s store.Score) client.Score {
	return client.Score{Metric: s.Metric, Value: s.Value, Lo: s.Lo, Hi: s.Hi}
}

// apiRecords is GET /api/v1/runs/:id/records: the whole run file as JSON
// Lines (header, then the records), which runfile.Read reads.
func (s *Server) apiRecords(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	if s.scope(c) != "" {
		if _, err := s.visibleRun(c); err != nil {
			return err
		}
	}
	// Build it whole first, so an error still gets a proper status.
	var b strings.Builder
	if err := s.store.WriteRunFile(c.Request().Context(), id, &b); err != nil {
		return err
	}
	return c.Blob(http.StatusOK, "application/x-ndjson", []byte(b.String()))
}

// apiModels is GET /api/v1/models.
func (s *Server) apiModels(c echo.Context) error {
	ms, err := s.store.Models(c.Request().Context(), s.scope(c), s.cfg.BaseRef, 0, false)
	if err != nil {
		return err
	}
	wire := make([]client.ModelTest, len(ms))
	for i, m := range ms {
		wire[i] = client.ModelTest{Repo: m.Repo, Model: m.Model, Test: m.Test, Runs: m.Runs, Latest: wireRun(&m.Latest)}
	}
	return c.JSON(http.StatusOK, map[string]any{"models": wire})
}

// apiModel serves /api/v1/repos/OWNER/NAME/models/{model}/runs,
// .../baseline and .../anchor, and the same under the legacy
// /api/v1/models/{model}/.
func (s *Server) apiModel(c echo.Context) error {
	p := c.Request().URL.Path
	var serve func(echo.Context, modelRef) error
	switch {
	case strings.HasSuffix(p, "/runs"):
		p, serve = strings.TrimSuffix(p, "/runs"), s.apiModelRuns
	case strings.HasSuffix(p, "/baseline"):
		p, serve = strings.TrimSuffix(p, "/baseline"), s.apiBaseline
	case strings.HasSuffix(p, "/anchor"):
		p, serve = strings.TrimSuffix(p, "/anchor"), s.apiAnchor
	default:
		return echo.NewHTTPError(http.StatusNotFound, "no such endpoint: want /api/v1/repos/OWNER/NAME/models/{model}/runs, .../baseline or .../anchor")
	}
	ref, err := s.modelOf(c, p, "/api/v1")
	if err != nil {
		return err
	}
	return serve(c, ref)
}

func (s *Server) apiModelRuns(c echo.Context, ref modelRef) error {
	f, err := filterOf(c)
	if err != nil {
		return err
	}
	f.Limit = defaultPageSize
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return badRequest("limit %q: want 1 to %d", v, maxPageSize)
		}
		f.Limit = n
	}
	f.Cursor = c.QueryParam("cursor")
	page, err := s.store.ModelRuns(c.Request().Context(), ref.Repo, ref.Model, f)
	if err != nil {
		return err
	}
	wire := client.RunsPage{Runs: make([]client.Run, len(page.Runs)), Next: page.Next}
	for i := range page.Runs {
		wire.Runs[i] = wireRun(&page.Runs[i])
	}
	return c.JSON(http.StatusOK, wire)
}

// filterOf reads the ref, test and since filters shared by the API and
// the history page.
func filterOf(c echo.Context) (store.Filter, error) {
	var f store.Filter
	if v := c.QueryParam("ref"); v != "" {
		if err := store.ValidRef(v); err != nil {
			return f, badRequest("ref: %v", err)
		}
		f.Ref = v
	}
	if v := c.QueryParam("test"); v != "" {
		if err := store.ValidTest(v); err != nil {
			return f, badRequest("test: %v", err)
		}
		f.Test = v
	}
	if v := c.QueryParam("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			t, err = time.Parse(time.DateOnly, v)
		}
		if err != nil {
			return f, badRequest("since %q: want a date (2026-11-30) or an RFC 3339 time", v)
		}
		f.Since = t
	}
	return f, nil
}

// apiBaseline is the newest run of a repository's model and test on a
// ref, with its settings in its header.
func (s *Server) apiBaseline(c echo.Context, m modelRef) error {
	ref := c.QueryParam("ref")
	if ref == "" {
		ref = s.cfg.BaseRef
	}
	test := c.QueryParam("test")
	if test == "" {
		return badRequest("test is required: ?test=fresh or ?test=probes")
	}
	for _, err := range []error{store.ValidRef(ref), store.ValidTest(test)} {
		if err != nil {
			return badRequest("%v", err)
		}
	}
	r, err := s.store.Baseline(c.Request().Context(), m.Repo, m.Model, ref, test)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wireRun(r))
}

// apiCompare is GET /api/v1/compare?base=ID&head=ID: the compare --json output.
func (s *Server) apiCompare(c echo.Context) error {
	cmp, _, _, err := s.compare(c, c.QueryParam("base"), c.QueryParam("head"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cmp)
}
