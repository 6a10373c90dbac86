-- Runs: the header as uploaded plus the columns the pages filter and sort on.
-- Scores are recomputed from the records at upload, never taken from the client.
CREATE TABLE runs (
    id             TEXT PRIMARY KEY,
    test           TEXT NOT NULL,
    model          TEXT NOT NULL,
    revision       TEXT NOT NULL,
    repo           TEXT NOT NULL,
    sha            TEXT NOT NULL,
    ref            TEXT NOT NULL,
    pr             INTEGER,
    started_at     INTEGER NOT NULL, -- unix nanoseconds, UTC
    uploaded_at    INTEGER NOT NULL,
    n_records      INTEGER NOT NULL,
    metric         TEXT NOT NULL,    -- bpb or accuracy
    score          REAL NOT NULL,
    ci_lo          REAL NOT NULL,
    ci_hi          REAL NOT NULL,
    baseline_id    TEXT,             -- the run the settings were checked against
    flags          TEXT NOT NULL,    -- JSON array of runfile.Diff, [] when none
    header         TEXT NOT NULL,    -- JSON of runfile.Header
    summary        TEXT NOT NULL,    -- JSON of the fresh or probe summary
    content_sha256 TEXT NOT NULL     -- of the canonical run file, for idempotent uploads
);

CREATE INDEX runs_model_test_time ON runs (model, test, started_at);
CREATE INDEX runs_model_ref_test_time ON runs (model, ref, test, started_at);

-- One row per document or item, in file order, as canonical JSON.
CREATE TABLE records (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    idx    INTEGER NOT NULL,
    rec_id TEXT NOT NULL,
    data   TEXT NOT NULL,
    PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;

-- Upload tokens: only a hash of the secret is kept.
CREATE TABLE tokens (
    id         INTEGER PRIMARY KEY,
    repo       TEXT NOT NULL,
    hash       TEXT NOT NULL UNIQUE,
    prefix     TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
