-- Artifact audits (issue 28): the report `udgam-ci audit artifact --json`
-- writes, checked by the server and stored as its canonical JSON, filed
-- under the model and commit of the reference's runs, so a run's page
-- shows the audits of its model at its commit. The id is derived from the
-- report, so the same report uploaded again is the same row.
CREATE TABLE audits (
    id          TEXT PRIMARY KEY,
    repo        TEXT NOT NULL,
    model       TEXT NOT NULL,
    revision    TEXT NOT NULL,
    sha         TEXT NOT NULL,
    ref         TEXT NOT NULL,
    pr          INTEGER,
    artifact    TEXT NOT NULL,    -- the artifact as the pages name it
    verdict     TEXT NOT NULL,    -- pass or fail
    uploaded_at INTEGER NOT NULL, -- unix nanoseconds, UTC
    report      TEXT NOT NULL     -- JSON of audit.Report
);

CREATE INDEX audits_repo_model_commit ON audits (repo, model, revision, sha, uploaded_at);
CREATE INDEX audits_repo_model_time ON audits (repo, model, uploaded_at);
