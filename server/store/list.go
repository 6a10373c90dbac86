package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Filter selects runs of one model of one repository.
type Filter struct {
	Ref    string    // only this ref, if set
	Test   string    // only this test, if set
	Since  time.Time // started at or after, if set
	Limit  int       // at most this many (newest first); 0 means no limit
	Cursor string    // continue after this cursor (from a previous page)
	Brief  bool      // leave Header (but its dataset.smoke) and Summary empty
}

// Page is one page of runs, newest first.
type Page struct {
	Runs []Run
	Next string // empty on the last page
}

// cursor encodes the sort key of the last run on a page.
func cursor(r *Run) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(r.StartedAt.UnixNano(), 10) + " " + r.ID))
}

func parseCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		ns, id, ok := strings.Cut(string(b), " ")
		if ok {
			t, err := strconv.ParseInt(ns, 10, 64)
			if err == nil && ValidID(id) == nil {
				return t, id, nil
			}
		}
	}
	return 0, "", invalidf("cursor %q is not one this server gave", c)
}

// validRepoOrNone is ValidRepo, or the empty repository of runs whose
// header named none (see migration 0002).
func validRepoOrNone(repo string) error {
	if repo == "" {
		return nil
	}
	return ValidRepo(repo)
}

// ModelRuns lists the runs of a repository's model, newest first.
func (s *Store) ModelRuns(ctx context.Context, repo, model string, f Filter) (Page, error) {
	for _, err := range []error{validRepoOrNone(repo), ValidModel(model)} {
		if err != nil {
			return Page{}, err
		}
	}
	cols := runColumns
	if f.Brief {
		cols = briefColumns
	}
	q := `SELECT ` + cols + ` FROM runs WHERE repo = ? AND model = ?`
	args := []any{repo, model}
	if f.Ref != "" {
		q += ` AND ref = ?`
		args = append(args, f.Ref)
	}
	if f.Test != "" {
		q += ` AND test = ?`
		args = append(args, f.Test)
	}
	if !f.Since.IsZero() {
		q += ` AND started_at >= ?`
		args = append(args, clampNanos(f.Since))
	}
	if f.Cursor != "" {
		ns, id, err := parseCursor(f.Cursor)
		if err != nil {
			return Page{}, err
		}
		q += ` AND (started_at < ? OR (started_at = ? AND id < ?))`
		args = append(args, ns, ns, id)
	}
	q += ` ORDER BY started_at DESC, id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit+1) // one more tells whether a next page exists
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return Page{}, fmt.Errorf("runs of %s: %w", model, err)
	}
	defer rows.Close()
	p := Page{Runs: []Run{}}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return Page{}, fmt.Errorf("runs of %s: %w", model, err)
		}
		p.Runs = append(p.Runs, *r)
	}
	if err := rows.Err(); err != nil {
		return Page{}, fmt.Errorf("runs of %s: %w", model, err)
	}
	if f.Limit > 0 && len(p.Runs) > f.Limit {
		p.Runs = p.Runs[:f.Limit]
		p.Next = cursor(&p.Runs[f.Limit-1])
	}
	return p, nil
}

// ModelRepos lists the repositories that have runs of a model, for routes
// that name only the model.
func (s *Store) ModelRepos(ctx context.Context, model string) ([]string, error) {
	if err := ValidModel(model); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT repo FROM runs WHERE model = ? ORDER BY repo`, model)
	if err != nil {
		return nil, fmt.Errorf("repositories of %s: %w", model, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, fmt.Errorf("repositories of %s: %w", model, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ModelTest is one repository's model's runs of one test, for the index page.
type ModelTest struct {
	Repo   string
	Model  string
	Test   string
	Runs   int
	Latest Run
	Recent []float64 // scores of the newest base-ref runs, oldest first, for the trend line
}

// Models lists every repository's models and tests with the latest run and
// the scores of up to recent runs on baseRef (none when recent is 0); only
// repo's when repo is not empty. Brief leaves the latest run's Header (but
// its dataset.smoke) and Summary empty. Three queries whatever the number
// of models: the index page of 2,000 runs once made two per model.
func (s *Store) Models(ctx context.Context, repo, baseRef string, recent int, brief bool) ([]ModelTest, error) {
	where, args := "", []any{}
	if repo != "" {
		where, args = ` WHERE repo = ?`, append(args, repo)
	}
	cols := runColumns
	if brief {
		cols = briefColumns
	}
	// The newest run of each (repo, model, test) and how many it has.
	rows, err := s.r.QueryContext(ctx, `SELECT n, `+cols+` FROM runs JOIN (
		SELECT id AS newest, n FROM (SELECT id, COUNT(*) OVER w AS n,
			ROW_NUMBER() OVER (w ORDER BY started_at DESC, id DESC) AS rn
			FROM runs`+where+` WINDOW w AS (PARTITION BY repo, model, test)) WHERE rn = 1
	) ON id = newest ORDER BY model, repo, test`, args...)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	var out []ModelTest
	idx := map[[3]string]int{}
	for rows.Next() {
		var n int
		r, err := scanRun(prefixed{rows, &n})
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("models: %w", err)
		}
		idx[[3]string{r.Repo, r.Model, r.Test}] = len(out)
		out = append(out, ModelTest{Repo: r.Repo, Model: r.Model, Test: r.Test, Runs: n, Latest: *r})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	if recent <= 0 {
		return out, nil
	}
	// The scores of the newest whole runs on the base ref, newest first:
	// a partial run's score is over part of the set.
	where = ` WHERE ref = ? AND partial = ''`
	args = []any{baseRef}
	if repo != "" {
		where, args = where+` AND repo = ?`, append(args, repo)
	}
	rows, err = s.r.QueryContext(ctx, `SELECT repo, model, test, score FROM (SELECT repo, model, test, score,
		ROW_NUMBER() OVER (PARTITION BY repo, model, test ORDER BY started_at DESC, id DESC) AS rn
		FROM runs`+where+`) WHERE rn <= ? ORDER BY rn DESC`, append(args, recent)...)
	if err != nil {
		return nil, fmt.Errorf("models: recent scores: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k [3]string
		var v float64
		if err := rows.Scan(&k[0], &k[1], &k[2], &v); err != nil {
			return nil, fmt.Errorf("models: recent scores: %w", err)
		}
		if i, ok := idx[k]; ok {
			out[i].Recent = append(out[i].Recent, v)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("models: recent scores: %w", err)
	}
	return out, nil
}

// prefixed scans one leading column into n, then the rest as sc would.
type prefixed struct {
	sc scanner
	n  *int
}

func (p prefixed) Scan(dest ...any) error { return p.sc.Scan(append([]any{p.n}, dest...)...) }

// Counts returns the number of runs and records stored (for tests and health).
func (s *Store) Counts(ctx context.Context) (runs, records int, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM records)`).Scan(&runs, &records)
	return runs, records, err
}
