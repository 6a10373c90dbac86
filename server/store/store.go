// Package store keeps runs, their records and upload tokens in one SQLite
// file (modernc.org/sqlite, pure Go). Writes go through a single
// connection so uploads never race for SQLite's write lock; reads use a
// pool of read-only connections that WAL lets run beside the writer.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Errors callers map to HTTP statuses.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	// ErrUnreadable is a stored run that no longer passes the checks of
	// runfile.Read (stored before they existed).
	ErrUnreadable = errors.New("stored run fails today's checks")
	// ErrFull is a write refused because the database's disk (or its
	// MaxPages) is full: nothing of it was kept.
	ErrFull = errors.New("the database is full")
)

// sqliteFull is SQLite's primary result code for a full disk or database.
const sqliteFull = 13

// asFull marks a SQLite "database or disk is full" error as ErrFull.
func asFull(err error) error {
	var coded interface{ Code() int }
	if errors.As(err, &coded) && coded.Code()&0xff == sqliteFull {
		return fmt.Errorf("%w: %v", ErrFull, err)
	}
	return err
}

// Store is an open database.
type Store struct {
	w    *sql.DB // one connection: every write transaction is serialised here
	r    *sql.DB // read-only pool
	path string
	now  func() time.Time
}

// Options tune Open; the zero value is fine.
type Options struct {
	Now func() time.Time // clock for upload and token times; time.Now if nil
	// MaxPages caps the database file at this many pages (SQLite's
	// max_page_count); 0 leaves SQLite's own cap. Writes past it fail as
	// on a full disk.
	MaxPages int
}

// Open opens (creating if needed) the database at path and applies any
// migration it has not seen yet.
func Open(ctx context.Context, dbPath string, opt Options) (*Store, error) {
	if dbPath == "" || strings.ContainsAny(dbPath, "?#") {
		return nil, fmt.Errorf("open database %q: the path must be non-empty and contain no ? or #", dbPath)
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	// synchronous=FULL: an upload answered 2xx survives a power cut too,
	// not only a killed process.
	common := "_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)"
	// busy_timeout comes first: pragmas run in order when a connection
	// opens, and switching a new file to WAL must wait for another process
	// doing the same rather than fail with SQLITE_BUSY.
	writer := "file:" + dbPath + "?" + common + "&_pragma=journal_mode(WAL)&_txlock=immediate"
	if opt.MaxPages > 0 {
		writer += "&_pragma=max_page_count(" + strconv.Itoa(opt.MaxPages) + ")"
	}
	w, err := sql.Open("sqlite", writer)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", dbPath, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	s := &Store{w: w, path: dbPath, now: now}
	if err := s.migrateRetrying(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open database %s: %w", dbPath, err)
	}
	r, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=query_only(1)&"+common)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open database %s: %w", dbPath, err)
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	s.r = r
	if err := s.judgeStored(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open database %s: %w", dbPath, err)
	}
	return s, nil
}

// Close closes both pools.
func (s *Store) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

type migration struct {
	version int
	name    string
	sql     string
}

// migrations lists the embedded files NNNN_name.sql in version order.
// Released files are never edited: a change is a new file.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, n := range names {
		base := path.Base(n)
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", base)
		}
		b, err := migrationFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrateRetrying migrates, retrying while another process holds the
// file: when several open a new database at once, SQLite answers some of
// them SQLITE_BUSY at once instead of waiting (its deadlock avoidance
// skips the busy timeout), so waiting is ours to do.
func (s *Store) migrateRetrying(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = s.migrate(ctx); err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(10+attempt*10) * time.Millisecond):
		}
	}
	return err
}

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var have int
	if err := s.w.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if len(ms) > 0 && have > ms[len(ms)-1].version {
		return fmt.Errorf("migrate: the database is at schema version %d, newer than this binary's %d", have, ms[len(ms)-1].version)
	}
	for _, m := range ms {
		if m.version <= have {
			continue
		}
		err := s.tx(ctx, func(tx *sql.Tx) error {
			// Another process may have applied it since we looked.
			var done int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&done); err != nil || done > 0 {
				return err
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, s.now().UnixNano())
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return nil
}

// SchemaVersion is the newest migration applied.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// tx runs fn in a write transaction (BEGIN IMMEDIATE) and commits it, or
// rolls everything back if fn fails.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// IntegrityCheck runs PRAGMA integrity_check and foreign_key_check.
func (s *Store) IntegrityCheck(ctx context.Context) error {
	rows, err := s.r.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("integrity check %s: %w", s.path, err)
	}
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			rows.Close()
			return fmt.Errorf("integrity check %s: %w", s.path, err)
		}
		msgs = append(msgs, m)
	}
	rows.Close()
	if len(msgs) != 1 || msgs[0] != "ok" {
		return fmt.Errorf("integrity check %s: %s", s.path, strings.Join(msgs, "; "))
	}
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&n); err != nil {
		return fmt.Errorf("foreign key check %s: %w", s.path, err)
	}
	if n > 0 {
		return fmt.Errorf("foreign key check %s: %d rows violate a foreign key", s.path, n)
	}
	return nil
}

// Generation changes whenever what is stored changes (every write bumps
// it in its own transaction): what is cached under one generation stays
// true until the next.
func (s *Store) Generation(ctx context.Context) (int64, error) {
	var g int64
	err := s.r.QueryRowContext(ctx, `SELECT n FROM store_generation`).Scan(&g)
	return g, err
}

// Ping checks the database answers, for the health endpoint.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.r.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
}
